#include "server/token_routes.hpp"

#include <nlohmann/json.hpp>

#include <vector>

#include "server/json_body.hpp"
#include "server/request.hpp"
#include "server/request_fields.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace specd::server {
namespace {

using nlohmann::json;

json object_body(std::string_view body) {
  json j = parse_json_body(body);
  if (!j.is_object())
    throw RequestError(400, "",
                       std::string("the request body must be a JSON object, not ") + kind_of(j));
  return j;
}

bool flag(const json& j, const char* key, bool fallback) {
  return j.contains(key) && !j[key].is_null() ? boolean(key, j[key]) : fallback;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string tokenize_json(const Tokenizer& tokenizer, std::string_view body) {
  const json j = object_body(body);
  check_known(j, {"content", "add_special", "parse_special", "with_pieces"}, "");
  if (!j.contains("content")) bad("content", "is required");
  const std::string content = string("content", j["content"]);
  const std::vector<int32_t> ids =
      tokenizer.encode(content, flag(j, "add_special", false), flag(j, "parse_special", true));
  json tokens = json::array();
  if (!flag(j, "with_pieces", false)) {
    tokens = ids;
  } else {
    for (int32_t id : ids) {
      const std::string piece = tokenizer.token_to_piece(id, /*render_special=*/true);
      std::vector<int> bytes;
      for (unsigned char c : piece) bytes.push_back(c);
      tokens.push_back(
          {{"id", id}, {"piece", valid_utf8(piece) == piece ? json(piece) : json(bytes)}});
    }
  }
  return dump(json{{"tokens", tokens}});
}

std::string detokenize_json(const Tokenizer& tokenizer, std::string_view body) {
  const json j = object_body(body);
  check_known(j, {"tokens"}, "");
  if (!j.contains("tokens")) bad("tokens", "is required");
  const json& t = j["tokens"];
  if (!t.is_array()) bad("tokens", std::string("must be an array of token ids, not ") + kind_of(t));
  std::vector<int32_t> ids;
  ids.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i)
    ids.push_back(
        int32_t(integer("tokens[" + std::to_string(i) + "]", t[i], 0, tokenizer.n_tokens() - 1,
                        "a token id below " + std::to_string(tokenizer.n_tokens()))));
  return dump(json{{"content", tokenizer.decode(ids, /*render_special=*/true)}});
}

}  // namespace specd::server
