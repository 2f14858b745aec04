#include "grammar/json_schema_grammar.hpp"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "grammar/gbnf_grammar.hpp"

namespace specd {
namespace {

using json = nlohmann::json;

// The value rules every JSON grammar here shares.
constexpr const char* kJsonRules =
    R"(value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )?
boolean ::= "true" | "false"
null ::= "null"
ws ::= ( " " | "\n" [ \t]{0,20} )?
)";

}  // namespace

std::string gbnf_literal(const std::string& bytes) {
  std::string out = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

namespace {

class SchemaConverter {
 public:
  SchemaConverter(const json& root, std::string where, std::string prefix = "")
      : root_(root), where_(std::move(where)), prefix_(std::move(prefix)) {}

  std::string convert() {
    const std::string top = rule_for(root_, "");
    return "root ::= " + top + "\n" + rules_ + kJsonRules;
  }

  // The root schema's expression; its rules are then in rules().
  std::string expression() { return rule_for(root_, ""); }
  const std::string& rules() const { return rules_; }

  // Parses `text`, a grammar made of this converter's rules, so that a schema that reaches
  // its own $ref again before matching any character (left recursion in the grammar) is
  // refused naming that $ref and where it is, not a generated rule.
  void check(const std::string& text) const {
    try {
      parse_gbnf(text);
    } catch (const GrammarError& e) {
      const std::string what = e.what();
      for (const auto& [rule, ref] : ref_rules_)
        if (what.find("'" + rule + "'") != std::string::npos)
          fail(ref.second, "$ref \"" + ref.first +
                               "\" reaches itself again before any character is matched (a "
                               "recursive schema must match something before it recurses)");
      throw;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw GrammarError(where_ + (path.empty() ? "" : path) + ": " + what);
  }

  std::string add_rule(const std::string& body) {
    const std::string name = prefix_ + "s" + std::to_string(++count_);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  // An expression (a rule name or a parenthesised body) for `schema`'s instances.
  std::string rule_for(const json& schema, const std::string& path) {
    if (++depth_ > 64) fail(path, "schemas nest deeper than 64");
    std::string out = convert(schema, path);
    --depth_;
    return out;
  }

  const json& resolve(const std::string& ref, const std::string& path) const {
    if (ref == "#") return root_;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (ref.rfind(p, 0) == 0) {
        const std::string section = p.substr(2, p.size() - 3);
        const std::string name = ref.substr(p.size());
        if (root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
          return root_[section][name];
        fail(path, "$ref \"" + ref + "\" names no schema");
      }
    }
    fail(path, "$ref \"" + ref +
                   "\" is not supported (only \"#\", \"#/$defs/<name>\", "
                   "\"#/definitions/<name>\")");
  }

  std::string convert(const json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(path, "the schema false has no instances");
      return "value";
    }
    if (!schema.is_object()) fail(path, "a schema must be an object or a boolean");
    static const std::set<std::string> annotations = {
        "title",    "description", "default",  "examples",  "$schema", "$id",
        "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions"};
    static const std::set<std::string> known = {
        "type",     "enum",        "const",      "anyOf",    "oneOf",
        "allOf",    "$ref",        "properties", "required", "additionalProperties",
        "items",    "prefixItems", "minItems",   "maxItems", "minLength",
        "maxLength"};
    for (const auto& [key, value] : schema.items())
      if (!annotations.count(key) && !known.count(key))
        fail(path, "the keyword \"" + key +
                       "\" is not supported (supported: type, enum, const, anyOf, oneOf, "
                       "allOf, $ref, properties, required, additionalProperties, items, "
                       "prefixItems, minItems, maxItems, minLength, maxLength)");

    if (schema.contains("$ref")) {
      if (!schema["$ref"].is_string()) fail(path + ".$ref", "must be a string");
      const std::string ref = schema["$ref"].get<std::string>();
      const auto it = refs_.find(ref);
      if (it != refs_.end()) return it->second;
      // Named before it is converted, so that a recursive schema refers to itself.
      const std::string name = prefix_ + "r" + std::to_string(refs_.size() + 1);
      refs_[ref] = name;
      ref_rules_[name] = {ref, path + ".$ref"};
      const std::string body = rule_for(resolve(ref, path + ".$ref"), path + ".$ref");
      rules_ += name + " ::= " + body + "\n";
      return name;
    }
    if (schema.contains("const")) return "(" + gbnf_literal(schema["const"].dump()) + ")";
    if (schema.contains("enum")) {
      const json& values = schema["enum"];
      if (!values.is_array() || values.empty()) fail(path + ".enum", "must be a non-empty array");
      std::string body;
      for (const auto& v : values) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return "(" + body + ")";
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      if (!schema.contains(key)) continue;
      const json& list = schema[key];
      const std::string at = path + "." + key;
      if (!list.is_array() || list.empty()) fail(at, "must be a non-empty array");
      if (std::string(key) == "allOf" && list.size() != 1)
        fail(at, "allOf with more than one schema is not supported");
      std::string body;
      for (size_t i = 0; i < list.size(); ++i)
        body += (i ? " | " : "") + rule_for(list[i], at + "[" + std::to_string(i) + "]");
      return "(" + body + ")";
    }
    if (!schema.contains("type")) {
      if (schema.contains("properties") || schema.contains("additionalProperties"))
        return object(schema, path);
      if (schema.contains("items") || schema.contains("prefixItems")) return array(schema, path);
      return "value";
    }
    const json& type = schema["type"];
    std::vector<std::string> types;
    if (type.is_string()) {
      types.push_back(type.get<std::string>());
    } else if (type.is_array() && !type.empty()) {
      for (const auto& t : type) {
        if (!t.is_string()) fail(path + ".type", "must list type names");
        types.push_back(t.get<std::string>());
      }
    } else {
      fail(path + ".type", "must be a type name or a non-empty list of them");
    }
    std::string body;
    for (const auto& t : types) {
      std::string one;
      if (t == "object")
        one = object(schema, path);
      else if (t == "array")
        one = array(schema, path);
      else if (t == "string")
        one = string(schema, path);
      else if (t == "number" || t == "integer" || t == "boolean" || t == "null")
        one = t;
      else
        fail(path + ".type", "\"" + t + "\" is not a JSON Schema type");
      body += (body.empty() ? "" : " | ") + one;
    }
    return types.size() == 1 ? body : "(" + body + ")";
  }

  std::string string(const json& schema, const std::string& path) {
    if (!schema.contains("minLength") && !schema.contains("maxLength")) return "string";
    const uint64_t min = count(schema, "minLength", 0, path);
    const uint64_t max = count(schema, "maxLength", UINT64_MAX, path);
    if (max != UINT64_MAX && max < min) fail(path, "maxLength is below minLength");
    return "(\"\\\"\" char{" + std::to_string(min) + "," +
           (max == UINT64_MAX ? "" : std::to_string(max)) + "} \"\\\"\")";
  }

  uint64_t count(const json& schema, const char* key, uint64_t fallback, const std::string& path) {
    if (!schema.contains(key)) return fallback;
    const json& v = schema[key];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail(path + "." + key, "must be a non-negative integer");
    const uint64_t n = v.get<uint64_t>();
    if (n > 10000) fail(path + "." + key, "above 10000 is not supported");
    return n;
  }

  std::string array(const json& schema, const std::string& path) {
    const uint64_t min = count(schema, "minItems", 0, path);
    const uint64_t max = count(schema, "maxItems", UINT64_MAX, path);
    if (max != UINT64_MAX && max < min) fail(path, "maxItems is below minItems");
    std::vector<std::string> fixed;
    if (schema.contains("prefixItems")) {
      const json& prefix = schema["prefixItems"];
      if (!prefix.is_array()) fail(path + ".prefixItems", "must be an array");
      for (size_t i = 0; i < prefix.size(); ++i)
        fixed.push_back(rule_for(prefix[i], path + ".prefixItems[" + std::to_string(i) + "]"));
    }
    std::string item = "value";
    bool more = true;
    if (schema.contains("items")) {
      if (schema["items"].is_boolean() && !schema["items"].get<bool>())
        more = false;
      else
        item = rule_for(schema["items"], path + ".items");
    }
    // Element i (0-based) is fixed[i] while there are fixed ones, then `item`.
    const uint64_t most = more ? max : std::min<uint64_t>(max, fixed.size());
    if (min > most) fail(path, "minItems cannot be met");
    // The elements as a chain of rules: e_i ::= ws "," ws x_i e_{i+1} when i >= min, ...
    // built from the end. After the fixed elements an unbounded tail is `item`*.
    std::string tail;  // what may follow element i-1 (a rule name, or "" for nothing)
    const uint64_t last = most == UINT64_MAX ? std::max<uint64_t>(min, fixed.size()) : most;
    if (most == UINT64_MAX) tail = add_rule("( ws \",\" ws " + item + " )*");
    for (uint64_t i = last; i-- > 1;) {
      const std::string x = i < fixed.size() ? fixed[i] : item;
      const std::string next = tail.empty() ? "" : " " + tail;
      const std::string body = "ws \",\" ws " + x + next;
      tail = add_rule(i < min ? body : body + " | \"\"");
    }
    if (most == 0) return "(\"[\" ws \"]\")";
    const std::string first = (fixed.empty() ? item : fixed[0]) + (tail.empty() ? "" : " " + tail);
    return "(\"[\" ws " + (min == 0 ? "( " + first + " )?" : first) + " ws \"]\")";
  }

  std::string object(const json& schema, const std::string& path) {
    const bool has_props = schema.contains("properties");
    std::string extra_value;  // the schema of additional properties' values; "" = none
    if (schema.contains("additionalProperties")) {
      const json& ap = schema["additionalProperties"];
      if (ap.is_boolean())
        extra_value = ap.get<bool>() ? "value" : "";
      else
        extra_value = rule_for(ap, path + ".additionalProperties");
    } else if (!has_props) {
      return "object";
    }
    std::set<std::string> required;
    if (schema.contains("required")) {
      const json& r = schema["required"];
      if (!r.is_array()) fail(path + ".required", "must be an array of property names");
      for (const auto& name : r) {
        if (!name.is_string()) fail(path + ".required", "must be an array of property names");
        required.insert(name.get<std::string>());
      }
    }
    struct Property {
      std::string key, value;  // the key's literal, the value's rule
      bool required;
    };
    std::vector<Property> props;
    if (has_props) {
      const json& p = schema["properties"];
      if (!p.is_object()) fail(path + ".properties", "must be an object");
      for (const auto& [key, sub] : p.items())
        props.push_back({gbnf_literal(json(key).dump()), rule_for(sub, path + ".properties." + key),
                         required.erase(key) > 0});
    }
    if (!required.empty())
      fail(path + ".required",
           "names \"" + *required.begin() + "\", which is not among the properties");
    const std::string extra =
        extra_value.empty() ? ""
                            : add_rule("( ws \",\" ws string ws \":\" ws " + extra_value + " )*");
    const std::string extra_first =
        extra_value.empty() ? "" : add_rule("string ws \":\" ws " + extra_value + " " + extra);
    // after_i: what may follow once something was written and properties i.. remain;
    // first_i: what may come when nothing was written yet.
    std::string after = extra, first = extra_first;
    for (size_t i = props.size(); i-- > 0;) {
      const std::string kv = props[i].key + " ws \":\" ws " + props[i].value;
      const std::string after_i = add_rule(
          "ws \",\" ws " + kv + (after.empty() ? "" : " " + after) +
          (props[i].required ? "" : " | " + (after.empty() ? std::string("\"\"") : after)));
      const std::string first_i = add_rule(
          kv + (after.empty() ? "" : " " + after) +
          (props[i].required ? "" : " | " + (first.empty() ? std::string("\"\"") : first)));
      after = after_i;
      first = first_i;
    }
    if (first.empty()) return "(\"{\" ws \"}\")";
    return "(\"{\" ws " + first + " ws \"}\")";
  }

  const json& root_;
  std::string where_;
  std::string prefix_;  // of every rule name, so that several schemas share a grammar
  std::string rules_;
  std::map<std::string, std::string> refs_;
  std::map<std::string, std::pair<std::string, std::string>> ref_rules_;  // rule: $ref, path
  int count_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string json_object_gbnf() {
  return std::string("root ::= object\n") + kJsonRules;
}

std::string json_value_gbnf_rules() {
  return kJsonRules;
}

std::string json_schema_expression(const json& schema, const std::string& where,
                                   const std::string& prefix, std::string& rules) {
  SchemaConverter converter(schema, where, prefix);
  std::string expression = converter.expression();
  converter.check("root ::= " + expression + "\n" + converter.rules() + kJsonRules);
  rules += converter.rules();
  return expression;
}

std::string json_schema_gbnf(const json& schema, const std::string& where) {
  SchemaConverter converter(schema, where);
  std::string text = converter.convert();
  converter.check(text);  // nor may a converter bug reach a request as a bad grammar
  return text;
}

}  // namespace specd
