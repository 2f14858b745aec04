// JSON mode and JSON Schema as grammars: instances match, non-instances do not, and keywords
// the converter cannot enforce are refused with their path.
#include <doctest/doctest.h>

#include <string>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema_grammar.hpp"

namespace specd {
namespace {

using json = nlohmann::json;

bool complete(const std::string& gbnf, const std::string& text) {
  const Grammar g = parse_gbnf(gbnf);
  GrammarMatcher m(g);
  GrammarState s = m.initial();
  return m.advance(s, text) && GrammarMatcher::can_end(s);
}

bool instance(const char* schema, const std::string& text) {
  return complete(json_schema_gbnf(json::parse(schema), "schema"), text);
}

std::string refusal(const char* schema) {
  try {
    json_schema_gbnf(json::parse(schema), "response_format.json_schema.schema");
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("json_object: any JSON object, and nothing else") {
  const std::string g = json_object_gbnf();
  CHECK(complete(g, "{}"));
  CHECK(complete(g, "{\"a\": [1, 2.5e-3, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": {}}}"));
  CHECK(complete(g, "{ \"é\" : -0.5 }"));
  CHECK_FALSE(complete(g, "[1]"));
  CHECK_FALSE(complete(g, "{\"a\": 01}"));
  CHECK_FALSE(complete(g, "{\"a\": \"tab\there\"}"));  // raw control character in a string
  CHECK_FALSE(complete(g, "{\"a\" 1}"));
  CHECK_FALSE(complete(g, "{\"a\": 1,}"));
  CHECK_FALSE(complete(g, "{\"a\": 1}}"));
}

TEST_CASE("json_schema: objects with required and optional properties") {
  const char* person = R"({"type": "object", "properties": {
      "age": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array",
      "items": {"type": "string"}}}, "required": ["name"]})";
  CHECK(instance(person, R"({"name": "Ann"})"));
  CHECK(instance(person, R"({"age": 31, "name": "Ann"})"));
  CHECK(instance(person, R"({"age": 31, "name": "Ann", "tags": ["a", "b"]})"));
  CHECK(instance(person, R"({ "name" : "Ann" , "tags" : [ ] })"));
  CHECK_FALSE(instance(person, R"({})"));  // name is required
  CHECK_FALSE(instance(person, R"({"age": 31})"));
  CHECK_FALSE(instance(person, R"({"age": 3.5, "name": "Ann"})"));  // not an integer
  CHECK_FALSE(instance(person, R"({"name": "Ann", "other": 1})"));  // no extras
  CHECK_FALSE(instance(person, R"({"name": 7})"));
  CHECK_FALSE(instance(person, R"({"name": "Ann", "tags": [1]})"));
  const char* all_optional = R"({"type": "object", "properties": {"a": {"type": "boolean"},
      "b": {"type": "null"}}})";
  CHECK(instance(all_optional, "{}"));
  CHECK(instance(all_optional, R"({"b": null})"));
  CHECK(instance(all_optional, R"({"a": false, "b": null})"));
  CHECK_FALSE(instance(all_optional, R"({, "b": null})"));
  const char* open = R"({"type": "object", "properties": {"id": {"type": "integer"}},
      "required": ["id"], "additionalProperties": {"type": "number"}})";
  CHECK(instance(open, R"({"id": 1, "x": 2.5, "y": -1})"));
  CHECK_FALSE(instance(open, R"({"id": 1, "x": "s"})"));
}

TEST_CASE("json_schema: enum, const, anyOf, type lists, arrays' bounds, strings' lengths") {
  CHECK(instance(R"({"enum": ["red", 2, null]})", "\"red\""));
  CHECK(instance(R"({"enum": ["red", 2, null]})", "2"));
  CHECK_FALSE(instance(R"({"enum": ["red", 2, null]})", "\"blue\""));
  CHECK(instance(R"({"const": {"a": 1}})", R"({"a":1})"));
  CHECK(instance(R"({"anyOf": [{"type": "integer"}, {"type": "string"}]})", "\"x\""));
  CHECK(instance(R"({"type": ["integer", "null"]})", "null"));
  CHECK_FALSE(instance(R"({"type": ["integer", "null"]})", "true"));
  const char* bounded = R"({"type": "array", "items": {"type": "integer"}, "minItems": 1,
      "maxItems": 3})";
  CHECK_FALSE(instance(bounded, "[]"));
  CHECK(instance(bounded, "[1]"));
  CHECK(instance(bounded, "[1, 2, 3]"));
  CHECK_FALSE(instance(bounded, "[1, 2, 3, 4]"));
  const char* tuple = R"({"type": "array", "prefixItems": [{"type": "string"},
      {"type": "integer"}], "items": false, "minItems": 2})";
  CHECK(instance(tuple, R"(["a", 1])"));
  CHECK_FALSE(instance(tuple, R"(["a"])"));
  CHECK_FALSE(instance(tuple, R"(["a", 1, 2])"));
  CHECK_FALSE(instance(tuple, R"([1, "a"])"));
  CHECK(instance(R"({"type": "array"})", "[]"));
  CHECK(instance(R"({"type": "array"})", R"([1, "x", {}])"));
  const char* code = R"({"type": "string", "minLength": 2, "maxLength": 3})";
  CHECK_FALSE(instance(code, "\"a\""));
  CHECK(instance(code, "\"ab\""));
  CHECK(instance(code, "\"a\\nb\""));  // an escape is one character
  CHECK_FALSE(instance(code, "\"abcd\""));
}

TEST_CASE("json_schema: $ref to $defs, recursion") {
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
      "v": {"type": "integer"}}, "required": ["v"]}}, "$ref": "#/$defs/node"})";
  CHECK(instance(tree, R"({"v": 1})"));
  CHECK(instance(tree, R"({"children": [{"v": 2}, {"children": [], "v": 3}], "v": 1})"));
  CHECK_FALSE(instance(tree, R"({"children": [{}], "v": 1})"));
}

TEST_CASE("json_schema: a $ref reached again before any character is refused, naming it") {
  CHECK(refusal(R"({"$ref": "#"})") ==
        "response_format.json_schema.schema.$ref: $ref \"#\" reaches itself again before any "
        "character is matched (a recursive schema must match something before it recurses)");
  CHECK(refusal(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
                              "b": {"$ref": "#/$defs/a"}},
                    "$ref": "#/$defs/a"})")
            .find("$ref \"#/$defs/") != std::string::npos);
  // Tools' parameters go through the expression form: the same refusal.
  std::string rules;
  CHECK_THROWS_WITH_AS(json_schema_expression(json::parse(R"({"$ref": "#"})"),
                                              "tools[0].function.parameters", "t0-", rules),
                       doctest::Contains("tools[0].function.parameters.$ref: $ref \"#\""),
                       GrammarError);
}

TEST_CASE("json_schema: what cannot be enforced is refused, naming the keyword's path") {
  CHECK(refusal(R"({"type": "string", "pattern": "^a"})") ==
        "response_format.json_schema.schema: the keyword \"pattern\" is not supported "
        "(supported: type, enum, const, anyOf, oneOf, allOf, $ref, properties, required, "
        "additionalProperties, items, prefixItems, minItems, maxItems, minLength, maxLength)");
  CHECK(refusal(R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}})")
            .rfind("response_format.json_schema.schema.properties.a: the keyword \"minimum\"", 0) ==
        0);
  CHECK(refusal(R"({"type": "strin"})") ==
        "response_format.json_schema.schema.type: \"strin\" is not a JSON Schema type");
  CHECK(refusal(R"({"$ref": "#/$defs/missing"})") ==
        "response_format.json_schema.schema.$ref: $ref \"#/$defs/missing\" names no schema");
  CHECK(refusal(R"({"$ref": "http://example.com/s.json"})").find("is not supported") !=
        std::string::npos);
  CHECK(refusal(R"({"type": "object", "properties": {}, "required": ["x"]})") ==
        "response_format.json_schema.schema.required: names \"x\", which is not among the "
        "properties");
  CHECK(refusal("false") ==
        "response_format.json_schema.schema: the schema false has no "
        "instances");
  CHECK(refusal("3") ==
        "response_format.json_schema.schema: a schema must be an object or a boolean");
  CHECK(refusal(R"({"type": "array", "maxItems": 100000})").find("above 10000") !=
        std::string::npos);
  CHECK(refusal(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})").find("allOf") !=
        std::string::npos);
}

}  // namespace specd
