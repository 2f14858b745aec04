#include "server/verify_endpoint.hpp"

#include "batching/failure_log.hpp"

#include "server/json_body.hpp"

#include <nlohmann/json.hpp>

#include <bit>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>

#include "backend/backend.hpp"
#include "batching/scheduler.hpp"
#include "batching/shared_engine.hpp"
#include "common/error.hpp"
#include "engine/engine.hpp"
#include "engine/vocab_digest.hpp"
#include "models/llama_model.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/verify_sessions.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::server {

using batching::Scheduler;
using batching::SharedEngine;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

static_assert(std::endian::native == std::endian::little,
              "the f32le-base64 encoding copies floats as they lie in memory");

std::string base64(const void* data, size_t n) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* b = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const uint32_t v = (uint32_t(b[i]) << 16) | (uint32_t(b[i + 1]) << 8) | b[i + 2];
    out += digits[v >> 18];
    out += digits[(v >> 12) & 63];
    out += digits[(v >> 6) & 63];
    out += digits[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t(b[i]) << 16;
    if (i + 1 < n) v |= uint32_t(b[i + 1]) << 8;
    out += digits[v >> 18];
    out += digits[(v >> 12) & 63];
    out += i + 1 < n ? digits[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A field that must be a string.
std::string string_field(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_string())
    throw RequestError(400, key, std::string("'") + key + "' must be a string");
  return it->get<std::string>();
}

// An array of integers in [lo, hi); `name` is the field's path for messages.
std::vector<int32_t> int_array(const json& value, const std::string& name, int64_t lo, int64_t hi) {
  if (!value.is_array())
    throw RequestError(400, name, "'" + name + "' must be an array of integers");
  std::vector<int32_t> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const json& v = value[i];
    if (!v.is_number_integer())
      throw RequestError(400, name, "'" + name + "'[" + std::to_string(i) + "] must be an integer");
    // Above INT64_MAX the value is unsigned: compared and shown as given, never wrapped.
    const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX);
    const int64_t x = huge ? INT64_MAX : v.get<int64_t>();
    if (huge || x < lo || x >= hi)
      throw RequestError(400, name,
                         "'" + name + "'[" + std::to_string(i) + "] = " + v.dump() +
                             " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             ")");
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

// What the server's model offers, read once on the worker.
struct ModelFacts {
  uint32_t vocab_size = 0, n_tokens = 0, context = 0, max_nodes = 0;
  uint64_t digest = 0;
};

// A parsed verify request.
struct VerifyRequest {
  std::string session;
  bool reset = false;
  std::vector<int32_t> delta;
  std::optional<std::vector<int32_t>> commit;
  int32_t root = 0;
  std::vector<int32_t> tokens, parents;
};

VerifyRequest parse_verify(const json& body, const ModelFacts& facts) {
  VerifyRequest r;
  r.session = string_field(body, "session");
  if (auto it = body.find("reset"); it != body.end()) {
    if (!it->is_boolean()) throw RequestError(400, "reset", "'reset' must be true or false");
    r.reset = it->get<bool>();
  }
  const int64_t vocab = facts.n_tokens;
  auto delta = body.find("delta");
  if (delta == body.end()) throw RequestError(400, "delta", "'delta' is required (may be [])");
  r.delta = int_array(*delta, "delta", 0, vocab);
  if (auto it = body.find("commit"); it != body.end() && !it->is_null())
    r.commit = int_array(*it, "commit", 1, int64_t(facts.max_nodes) + 1);
  auto root = body.find("root");
  if (root == body.end() || !root->is_number_integer())
    throw RequestError(400, "root", "'root' must be an integer token id");
  const bool huge = root->is_number_unsigned() && root->get<uint64_t>() > uint64_t(INT64_MAX);
  const int64_t root_id = huge ? INT64_MAX : root->get<int64_t>();
  if (huge || root_id < 0 || root_id >= vocab)
    throw RequestError(
        400, "root", "'root' = " + root->dump() + " is outside [0, " + std::to_string(vocab) + ")");
  r.root = static_cast<int32_t>(root_id);
  auto tree = body.find("tree");
  if (tree == body.end() || !tree->is_object())
    throw RequestError(400, "tree",
                       "'tree' must be an object {\"tokens\": [...], \"parents\": [...]}");
  auto tokens = tree->find("tokens"), parents = tree->find("parents");
  if (tokens == tree->end()) throw RequestError(400, "tree.tokens", "'tree.tokens' is required");
  if (parents == tree->end()) throw RequestError(400, "tree.parents", "'tree.parents' is required");
  r.tokens = int_array(*tokens, "tree.tokens", 0, vocab);
  if (r.tokens.size() > facts.max_nodes)
    throw RequestError(400, "tree.tokens",
                       "'tree.tokens' has " + std::to_string(r.tokens.size()) +
                           " nodes; this server verifies at most " +
                           std::to_string(facts.max_nodes) + " per round (max_nodes)");
  r.parents = int_array(*parents, "tree.parents", 0, int64_t(facts.max_nodes));
  if (r.parents.size() != r.tokens.size())
    throw RequestError(400, "tree.parents",
                       "'tree.parents' has " + std::to_string(r.parents.size()) +
                           " entries, 'tree.tokens' " + std::to_string(r.tokens.size()));
  for (size_t i = 0; i < r.parents.size(); ++i)
    if (r.parents[i] > static_cast<int32_t>(i))
      throw RequestError(
          400, "tree.parents",
          "'tree.parents'[" + std::to_string(i) + "] = " + std::to_string(r.parents[i]) +
              ": node " + std::to_string(i + 1) +
              "'s parent must be the root (0) or an earlier node (1.." + std::to_string(i) + ")");
  return r;
}

// Commits the accepted path of the session's last tree, after checking it and the delta.
void commit_pending(VerifySession& s, const VerifyRequest& r) {
  if (!r.commit)
    throw RequestError(400, "commit",
                       "'commit' is required: the session's last tree is pending (send the "
                       "accepted node ids, [] when none was accepted)");
  const std::vector<int32_t>& path = *r.commit;
  const int32_t n_nodes = static_cast<int32_t>(s.pending.size()) - 1;
  std::vector<int32_t> kept{s.pending[0]};
  int32_t parent = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] > n_nodes || s.parents[path[i] - 1] != parent)
      throw RequestError(
          400, "commit",
          "'commit'[" + std::to_string(i) + "] = " + std::to_string(path[i]) +
              " is not a child of " +
              (parent == 0 ? std::string("the root") : "node " + std::to_string(parent)) +
              " in the last verified tree");
    parent = path[i];
    kept.push_back(s.pending[path[i]]);
  }
  if (r.delta != kept)
    throw RequestError(400, "delta",
                       "'delta' must be the committed tokens (the last root and the accepted "
                       "nodes' tokens, " +
                           std::to_string(kept.size()) +
                           " of them): it does not match the session's last tree");
  s.verifier->commit(path);
  s.pending.clear();
}

}  // namespace

struct VerifyEndpoint::Impl {
  const Config& config;
  SharedEngine& engines;
  Scheduler& scheduler;
  const std::atomic<bool>& draining;
  // Made on the worker at the first request: the scheduler's KV budget, which the sessions
  // reserve from, is sized from the loaded engine.
  std::optional<VerifySessions> open_sessions;
  std::optional<ModelFacts> facts;  // read on the worker at the first request

  Impl(const Config& c, SharedEngine& e, Scheduler& s, const std::atomic<bool>& d)
      : config(c), engines(e), scheduler(s), draining(d) {
    // A completion waiting for KV that sessions hold frees those unused for verify_yield_s.
    scheduler.set_reclaim([this] {
      if (!open_sessions) return;
      open_sessions->expire();
      open_sessions->free_idle(std::chrono::duration<double>(config.server.verify_yield_s));
    });
  }

  // On the worker.
  VerifySessions& sessions() {
    if (!open_sessions)
      open_sessions.emplace(static_cast<size_t>(config.server.verify_sessions),
                            config.server.verify_idle_s, scheduler.kv_budget());
    return *open_sessions;
  }

  uint32_t session_context() const {
    return static_cast<uint32_t>(config.server.kv_budget > 0 ? config.server.kv_budget
                                                             : config.engine.context);
  }

  // On the worker: the configured engine's model (pinned in the cache, so the sessions'
  // caches never outlive it).
  Engine& engine() { return engines.get(batching::StrategyChoice{}); }

  const ModelFacts& model_facts() {
    if (!facts) {
      Engine& e = engine();
      LlamaModel& model = e.target();
      ModelFacts f;
      f.vocab_size = static_cast<uint32_t>(model.info().vocab_size);
      f.n_tokens = static_cast<uint32_t>(e.tokenizer().n_tokens());
      const uint32_t ctx = static_cast<uint32_t>(model.info().n_ctx);
      f.context = session_context() == 0 ? ctx : std::min(session_context(), ctx);
      // Trees within the rows the device computes batch-invariantly, as the engine's own.
      f.max_nodes = model.device().info().invariant_max_rows - 1;
      f.digest = vocab_digest(e.tokenizer());
      facts = f;
    }
    return *facts;
  }

  json open() {
    json out;
    scheduler.run_exclusive([&] {
      const ModelFacts& f = model_facts();
      const std::string id = sessions().open(engine().target(), session_context());
      out = {{"session", id},
             {"vocab_size", f.vocab_size},
             {"n_tokens", f.n_tokens},
             {"vocab_digest", digest_hex(f.digest)},
             {"context_length", f.context},
             {"max_nodes", f.max_nodes},
             {"model", config.target.model}};
    });
    return out;
  }

  // The answer without its logits, which go to `logits_b64` (spliced in by handle()).
  json verify(const json& body, std::string& logits_b64) {
    json out;
    scheduler.run_exclusive([&] {
      sessions().expire();
      const ModelFacts& f = model_facts();
      const VerifyRequest r = parse_verify(body, f);
      VerifySession& s = sessions().get(r.session);
      Verifier& v = *s.verifier;
      try {
        if (r.reset) {
          s.started = false;
          s.pending.clear();
          std::vector<int32_t> prompt = r.delta;
          prompt.push_back(r.root);
          if (prompt.size() + r.tokens.size() > v.context_length())
            throw RequestError(400, "delta",
                               "'delta': the prompt's " + std::to_string(prompt.size()) +
                                   " tokens and the tree's " + std::to_string(r.tokens.size()) +
                                   " nodes exceed the session's context of " +
                                   std::to_string(v.context_length()));
          v.begin(prompt, nullptr);
          s.started = true;
        } else {
          if (!s.started)
            throw RequestError(400, "reset",
                               "'reset': the session holds no sequence (new, or its last request "
                               "failed): send reset: true with the prompt in 'delta'");
          if (!s.pending.empty()) {
            commit_pending(s, r);
          } else if (!r.delta.empty() || (r.commit && !r.commit->empty())) {
            throw RequestError(400, "delta", "'delta' must be [] when no tree is pending");
          }
        }
        if (v.committed() + r.tokens.size() + 1 > v.context_length())
          throw RequestError(400, "tree.tokens",
                             "'tree.tokens': the session holds " + std::to_string(v.committed()) +
                                 " tokens; the root and " + std::to_string(r.tokens.size()) +
                                 " nodes exceed its context of " +
                                 std::to_string(v.context_length()));
        specd_draft_tree tree{};
        tree.struct_size = sizeof(tree);
        tree.n_nodes = static_cast<uint32_t>(r.tokens.size());
        tree.vocab_size = f.vocab_size;
        tree.tokens = r.tokens.data();
        tree.parents = r.parents.data();
        const size_t rows = r.tokens.size() + 1;
        std::vector<float> logits(rows * f.vocab_size);
        const auto t0 = Clock::now();
        v.verify(r.root, tree, logits.data(), nullptr);
        const double compute_s = std::chrono::duration<double>(Clock::now() - t0).count();
        s.pending = {r.root};
        s.pending.insert(s.pending.end(), r.tokens.begin(), r.tokens.end());
        s.parents = r.parents;
        out = {
            {"session", r.session},       {"committed", v.committed()}, {"rows", rows},
            {"vocab_size", f.vocab_size}, {"encoding", "f32le-base64"}, {"compute_s", compute_s}};
        logits_b64 = base64(logits.data(), logits.size() * sizeof(float));
      } catch (...) {
        s.started = false;  // the cache's state is unknown: the client must reset
        s.pending.clear();
        throw;
      }
    });
    return out;
  }

  json close(const json& body) {
    const std::string id = string_field(body, "session");
    bool closed = false;
    scheduler.run_exclusive([&] { closed = sessions().close(id); });
    return {{"closed", closed}};
  }

  void handle(const HttpRequest& req, HttpResponse& res) {
    auto fail = [&](int status, const std::string& message, const std::string& param,
                    const std::string& code) {
      res.status = status;
      res.set_content(error_json(message, status >= 500 ? "server_error" : "invalid_request_error",
                                 param, code),
                      "application/json");
    };
    try {
      if (draining) throw RequestError(503, "", "the server is shutting down", "shutting_down");
      if (config.server.verify_sessions == 0)
        throw RequestError(404, "",
                           "/v1/verify is off on this server ([server] verify_sessions = 0)",
                           "not_found");
      json body = parse_json_body(req.body, "invalid_json");
      if (!body.is_object())
        throw RequestError(400, "", "the body must be a JSON object", "invalid_json");
      std::string op = "verify";
      if (body.contains("op")) op = string_field(body, "op");
      json out;
      std::string logits;
      if (op == "open")
        out = open();
      else if (op == "verify")
        out = verify(body, logits);
      else if (op == "close")
        out = close(body);
      else
        throw RequestError(400, "op",
                           "'op' must be \"open\", \"verify\" or \"close\", not \"" + op + "\"");
      std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      if (!logits.empty()) {
        // Base64 needs no JSON escaping: appended as the last member, not copied through
        // the JSON writer (a round's logits are megabytes for a large vocabulary).
        text.pop_back();
        text += ",\"logits\":\"" + logits + "\"}";
      }
      res.set_content(text, "application/json");
    } catch (const RequestError& e) {
      fail(e.status, e.what(), e.param, e.code);
    } catch (const UsageError& e) {
      fail(400, e.what(), "delta", "invalid_request_error");
    } catch (const Error& e) {
      // Draining began while this request waited for the worker, or the model failed.
      if (draining)
        fail(503, e.what(), "", "shutting_down");
      else {
        batching::log_request_failure(e.what());
        fail(500, e.what(), "", "server_error");
      }
    } catch (const std::exception& e) {
      batching::log_request_failure(e.what());
      fail(500, e.what(), "", "server_error");
    }
  }
};

VerifyEndpoint::VerifyEndpoint(const Config& config, SharedEngine& engines, Scheduler& scheduler,
                               const std::atomic<bool>& draining)
    : impl_(std::make_unique<Impl>(config, engines, scheduler, draining)) {}

VerifyEndpoint::~VerifyEndpoint() = default;

void VerifyEndpoint::handle(const HttpRequest& req, HttpResponse& res) {
  impl_->handle(req, res);
}

}  // namespace specd::server
