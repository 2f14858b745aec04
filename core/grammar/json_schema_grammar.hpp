// JSON output as GBNF (gbnf_grammar.hpp): OpenAI's response_format
// {"type": "json_object"} (any JSON object) and {"type": "json_schema"} (a schema's instances).
//
// The schema subset, each keyword enforced by the grammar (anything else is refused, never
// ignored, so an output can be trusted to satisfy every keyword the schema has):
//   type (one or a list), enum, const, anyOf, oneOf (as anyOf: exclusivity is not checked),
//   allOf with one schema, $ref to "#", "#/$defs/<name>" or "#/definitions/<name>";
//   object: properties, required, additionalProperties (false, true or a schema);
//   array: items, prefixItems, minItems, maxItems;  string: minLength, maxLength.
// Annotations (title, description, default, examples, $schema, $id, $comment, ...) are
// accepted and have no effect. Properties come out in the order of their names (a request's
// JSON keeps no other), required and optional alike. An object schema with properties and no
// additionalProperties allows only those properties (OpenAI's strict mode); numbers have at most 16
// digits before and after the point, whitespace between tokens at most 20 characters, so that a
// model cannot run on.
//
// Thread rule: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace specd {

// Any JSON object (json_object mode). Also its value rules' source for the schema grammar.
std::string json_object_gbnf();
// The instances of `schema`. Throws GrammarError naming `where` and the keyword's path.
std::string json_schema_gbnf(const nlohmann::json& schema, const std::string& where);

// For grammars that embed several schemas (tool calls): the expression for `schema`'s
// instances, its rules appended to `rules`, every rule name starting with `prefix` (letters,
// digits and '-'). The expressions use the value rules of json_value_gbnf_rules(), which the
// grammar must include once. Throws GrammarError as json_schema_gbnf does.
std::string json_schema_expression(const nlohmann::json& schema, const std::string& where,
                                   const std::string& prefix, std::string& rules);
std::string json_value_gbnf_rules();
// A GBNF string literal spelling `bytes` exactly.
std::string gbnf_literal(const std::string& bytes);

}  // namespace specd
