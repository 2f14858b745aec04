// llama-server's POST /tokenize and POST /detokenize, on the target's tokenizer.
//   /tokenize   {"content": text, "add_special": false, "parse_special": true,
//                "with_pieces": false} -> {"tokens": [id, ...]}, or with pieces
//               {"tokens": [{"id": id, "piece": text}, ...]} (a piece that is not whole
//               UTF-8 is given as its bytes, an array of integers, as llama-server does)
//   /detokenize {"tokens": [id, ...]} -> {"content": text} (control tokens rendered)
// Thread rule: pure functions of the tokenizer (which is read-only).
#pragma once

#include <string>
#include <string_view>

namespace specd {
class Tokenizer;
}

namespace specd::server {

// The response body. Throws RequestError (400) naming the field.
std::string tokenize_json(const Tokenizer& tokenizer, std::string_view body);
std::string detokenize_json(const Tokenizer& tokenizer, std::string_view body);

}  // namespace specd::server
