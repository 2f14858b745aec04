#include "server/harmony_tools.hpp"

#include "server/jinja_json.hpp"

namespace specd::server {
namespace {

using ordered_json = nlohmann::ordered_json;

// The macro's text between a nested property's ": " and its type: a newline and the
// indentation of the template's line (a `{{` without whitespace control keeps it).
constexpr const char* kNestedBreak = "\n                ";
// Before a oneOf variant's default: the indentation of its template line (trim_blocks drops
// the newline before it, not the spaces).
constexpr const char* kVariantDefaultIndent = "                    ";

// A schema's member, or nullptr where the schema is no object or lacks it (Jinja's undefined).
const ordered_json* member(const ordered_json& spec, const char* key) {
  if (!spec.is_object()) return nullptr;
  const auto it = spec.find(key);
  return it == spec.end() ? nullptr : &*it;
}

// Jinja's truth of a value (undefined, null, false, 0, "" and empty containers are false).
bool truthy(const ordered_json* v) {
  if (!v || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0;
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  return !v->empty();
}

bool equals(const ordered_json* v, const char* text) {
  return v && v->is_string() && v->get_ref<const std::string&>() == text;
}

// A value as Jinja's `+` and `join` print it (Python's str): a string as is, True, False,
// None; anything else as its JSON text (where the template's `+` would fail on a non-string).
std::string python_str(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return jinja_tojson(v);
}

// Jinja's `length` of a string: its characters, not bytes.
size_t characters(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool listed(const ordered_json* required, const std::string& name) {
  if (!required || !required->is_array()) return false;
  for (const ordered_json& r : *required)
    if (r.is_string() && r.get_ref<const std::string&>() == name) return true;
  return false;
}

std::string array_type(const ordered_json& spec) {
  std::string out = "any[]";
  const ordered_json* items = member(spec, "items");
  if (truthy(items)) {
    const ordered_json* item_type = member(*items, "type");
    if (equals(item_type, "string")) {
      out = "string[]";
    } else if (equals(item_type, "number") || equals(item_type, "integer")) {
      out = "number[]";
    } else if (equals(item_type, "boolean")) {
      out = "boolean[]";
    } else {
      const std::string inner = harmony_typescript_type(*items);
      out = inner == "object | object" || characters(inner) > 50 ? "any[]" : inner + "[]";
    }
  }
  if (truthy(member(spec, "nullable"))) out += " | null";
  return out;
}

// The template first looks for object variants to answer "any", but it sets its flag inside
// the loop, where Jinja2's scoping discards it: every oneOf is rendered variant by variant, as
// transformers renders it.
std::string one_of_type(const ordered_json& variants) {
  if (!variants.is_array()) return "any";
  std::string out;
  for (size_t i = 0; i < variants.size(); ++i) {
    const ordered_json& v = variants[i];
    out += harmony_typescript_type(v);
    if (const ordered_json* d = member(v, "description"); truthy(d)) out += "// " + python_str(*d);
    if (const ordered_json* d = member(v, "default"))
      out += std::string(kVariantDefaultIndent) + "// default: " + jinja_tojson(*d);
    if (i + 1 < variants.size()) out += " | \n";
  }
  return out;
}

std::string object_type(const ordered_json& spec) {
  const ordered_json* properties = member(spec, "properties");
  if (!truthy(properties) || !properties->is_object()) return "object";
  const ordered_json* required = member(spec, "required");
  std::string out = "{\n";
  bool first = true;
  for (const auto& [name, property] : properties->items()) {
    if (!first) out += ", ";
    first = false;
    out += name + (listed(required, name) ? "" : "?") + ": " + kNestedBreak +
           harmony_typescript_type(property);
  }
  return out + "}";
}

}  // namespace

std::string harmony_typescript_type(const ordered_json& spec) {
  const ordered_json* type = member(spec, "type");
  if (equals(type, "array")) return array_type(spec);
  if (type && type->is_array() && !type->empty()) {  // ["string", "null"]: a union
    std::string out;
    for (size_t i = 0; i < type->size(); ++i) out += (i ? " | " : "") + python_str((*type)[i]);
    return out;
  }
  if (const ordered_json* variants = member(spec, "oneOf"); truthy(variants))
    return one_of_type(*variants);
  if (equals(type, "string")) {
    const ordered_json* values = member(spec, "enum");
    if (truthy(values) && values->is_array()) {
      std::string out = "\"";
      for (size_t i = 0; i < values->size(); ++i)
        out += (i ? "\" | \"" : "") + python_str((*values)[i]);
      return out + "\"";
    }
    return truthy(member(spec, "nullable")) ? "string | null" : "string";
  }
  if (equals(type, "number") || equals(type, "integer")) return "number";
  if (equals(type, "boolean")) return "boolean";
  if (equals(type, "object")) return object_type(spec);
  return "any";
}

std::string harmony_functions_namespace(const std::vector<ToolFunction>& tools) {
  std::string out = "## functions\n\nnamespace functions {\n\n";
  for (const ToolFunction& tool : tools) {
    out += "// " + tool.description + "\n";
    out += "type " + tool.name + " = ";
    const ordered_json schema = ordered_json::parse(tool.parameters);
    const ordered_json* properties = member(schema, "properties");
    if (!truthy(properties) || !properties->is_object()) {
      out += "() => any;\n\n";
      continue;
    }
    const ordered_json* required = member(schema, "required");
    out += "(_: {\n";
    for (const auto& [name, spec] : properties->items()) {
      if (const ordered_json* d = member(spec, "description"); truthy(d))
        out += "// " + python_str(*d) + "\n";
      out += name + (listed(required, name) ? "" : "?") + ": " + harmony_typescript_type(spec);
      // The template writes an enum's or a oneOf's default as text, any other as JSON, and
      // puts no comma before a oneOf's.
      if (const ordered_json* d = member(spec, "default")) {
        if (truthy(member(spec, "enum")))
          out += ", // default: " + python_str(*d);
        else if (truthy(member(spec, "oneOf")))
          out += "// default: " + python_str(*d);
        else
          out += ", // default: " + jinja_tojson(*d);
      }
      out += ",\n";
    }
    out += "}) => any;\n\n";
  }
  return out + "} // namespace functions";
}

}  // namespace specd::server
