// Why the batching layer did not run, or did not finish, a request: a typed refusal that the
// layer above maps to its own answer (the HTTP server: 400, 503 or 500 with OpenAI's error
// body, server/request.hpp). The batching layer never speaks HTTP.
#pragma once

#include <stdexcept>
#include <string>

#include "batching/generation_request.hpp"
#include "common/error.hpp"
#include "grammar/gbnf_grammar.hpp"

namespace specd::batching {

class Refusal : public std::runtime_error {
 public:
  enum class Kind {
    invalid_request,   // the request cannot run as given (a strategy the server refuses, a
                       // prompt the model cannot start from): the client must change it
    retry_later,       // it could run, but not now (the KV budget is held elsewhere)
    internal_failure,  // the engine or a plugin failed while running it
  };

  // `field`: the request field concerned ("prompt", "max_tokens", "temperature",
  // "speculative.rule", ...; "" when none). `code`: a short machine-readable reason; empty
  // takes the kind's default.
  Refusal(Kind kind, std::string field, const std::string& message, std::string code = "")
      : std::runtime_error(message), kind(kind), field(std::move(field)), code(std::move(code)) {}

  Kind kind;
  std::string field;
  std::string code;
};

// The refusal of a request that a UsageError ended while it ran: a grammar's error (too
// ambiguous, no token can continue) names the field the grammar came from, any other the
// prompt.
inline Refusal usage_refusal(const UsageError& e, const GenerationRequest& r) {
  const bool grammar = dynamic_cast<const GrammarError*>(&e) != nullptr;
  return Refusal(Refusal::Kind::invalid_request,
                 grammar ? (r.grammar_field.empty() ? "grammar" : r.grammar_field) : "prompt",
                 e.what());
}

}  // namespace specd::batching
