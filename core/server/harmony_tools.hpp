// The request's tools as gpt-oss's chat template describes them to the model, in its
// developer message: a TypeScript-like namespace,
//   ## functions\n\nnamespace functions {\n\n// DESCRIPTION\ntype NAME = (_: {\n
//   // PARAM DESCRIPTION\nPARAM?: TYPE, // default: VALUE,\n...}) => any;\n\n} // namespace
//   functions
// with each parameter's type rendered from its JSON Schema by the template's
// render_typescript_type macro, quirks included (the model was trained on this text): nested
// objects keep the macro's stray newlines and indentation, oneOf variants are joined by
// " | \n", anyOf and unknown shapes are "any", arrays of long element types "any[]".
//
// Thread rule: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/chat_template.hpp"

namespace specd::server {

// The "## functions" section for `tools` (each one's parameters: the JSON text of its schema).
std::string harmony_functions_namespace(const std::vector<ToolFunction>& tools);

// One schema's type as the macro writes it ("string", "\"a\" | \"b\"", "number[]", ...).
std::string harmony_typescript_type(const nlohmann::ordered_json& schema);

}  // namespace specd::server
