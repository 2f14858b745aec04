// The remote verifier: each round's draft tree is scored by the target model of a
// `specd serve` instance (POST /v1/verify), so a small machine drafts and a big one
// verifies. The server returns the target's logits rows; the acceptance rule runs here,
// unchanged, so every exactness guarantee of the local verifier holds.
//
// [verifier] kind = "remote" with
//   url               "http://host:port" of the server (required)
//   api_key           the server's [server] api_key ("" = none)
//   timeout_s         seconds to wait for one answer (default 60)
//   connect_timeout_s seconds to wait for the connection (default 5)
//
// One session per verifier object: opened at create (which checks the URL, the key and the
// vocabulary), closed at destroy; when the server has freed it (idle, restarted), a new one
// is opened and the sequence so far replayed into it, once per verify. Each verify sends
// the tokens committed since the last one (the delta) and the accepted node ids of the last
// tree, then the new root and tree.
// No hidden features (hidden_dim 0): proposers that need them refuse this verifier.
#include <specd/verifier.h>
#include <specd/cpp/plugin.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "remote_client.hpp"

namespace {

constexpr const char* kId = "org.specd.verify.remote";

// A network or server failure: UNAVAILABLE, naming the URL (the client's messages do).
template <class F>
auto unavailable(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const remote::RemoteError& e) {
    throw specd::sdk::PluginError(SPECD_STATUS_UNAVAILABLE, e.what());
  }
}

class RemoteVerifier {
 public:
  explicit RemoteVerifier(const specd::sdk::Params& params) {
    params.require_known({"url", "api_key", "timeout_s", "connect_timeout_s"});
    remote::ClientOptions options;
    options.url = params.get_string("url", "");
    if (options.url.empty())
      throw params.invalid("url",
                           "is required: the server's address, e.g. \"http://10.0.0.2:8080\"");
    options.api_key = params.get_string("api_key", "");
    options.timeout_s = params.get_float("timeout_s", 60);
    options.connect_timeout_s = params.get_float("connect_timeout_s", 5);
    if (!(options.timeout_s > 0 && options.timeout_s <= 3600))
      throw params.invalid("timeout_s", "must be in (0, 3600] seconds");
    if (!(options.connect_timeout_s > 0 && options.connect_timeout_s <= 600))
      throw params.invalid("connect_timeout_s", "must be in (0, 600] seconds");
    try {
      client_ = std::make_unique<remote::Client>(options);
    } catch (const remote::RemoteError& e) {
      throw params.invalid("url", e.what());
    }
    session_ = unavailable([&] { return client_->open(); });
  }

  ~RemoteVerifier() { client_->close(session_.id); }

  void info(specd_verifier_info& info) const {
    info.vocab_size = session_.vocab_size;
    info.hidden_dim = 0;
    info.context_length = session_.context_length;
    if (info.struct_size >= offsetof(specd_verifier_info, last_overhead_s) + sizeof(double)) {
      info.vocab_digest = session_.vocab_digest;
      info.last_overhead_s = last_overhead_s_;
    }
  }

  void begin(std::span<const specd_token> tokens, float* hidden) {
    if (hidden)
      throw specd::sdk::PluginError(SPECD_STATUS_UNSUPPORTED, "offers no hidden features");
    call_ = remote::VerifyCall{};
    call_.reset = true;
    call_.delta.assign(tokens.begin(), tokens.end() - 1);  // the last token is the first root
    sequence_ = call_.delta;
  }

  void verify(specd_token root, const specd_draft_tree& tree, float* logits, float* hidden) {
    if (hidden)
      throw specd::sdk::PluginError(SPECD_STATUS_UNSUPPORTED, "offers no hidden features");
    if (session_.max_nodes && tree.n_nodes > session_.max_nodes)
      throw specd::sdk::PluginError(
          SPECD_STATUS_INVALID_ARGUMENT,
          client_->endpoint() + ": a tree of " + std::to_string(tree.n_nodes) +
              " nodes; the server verifies at most " + std::to_string(session_.max_nodes));
    call_.root = root;
    call_.tokens = tree.tokens;
    call_.parents = tree.parents;
    call_.n_nodes = tree.n_nodes;
    const auto start = std::chrono::steady_clock::now();
    const double compute_s = unavailable([&] {
      try {
        return client_->verify(session_.id, call_, session_.vocab_size, logits);
      } catch (const remote::RemoteError& e) {
        if (e.code != "unknown_session") throw;
        // The server freed the session (idle too long, or restarted): open another and
        // replay the sequence so far, once.
        reopen();
        call_.reset = true;
        call_.delta = sequence_;
        call_.commit.clear();
        return client_->verify(session_.id, call_, session_.vocab_size, logits);
      }
    });
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    last_overhead_s_ = wall > compute_s ? wall - compute_s : 0;
    // What the next call's commit refers to.
    last_root_ = root;
    last_tokens_.assign(tree.tokens, tree.tokens + tree.n_nodes);
    call_ = remote::VerifyCall{};
  }

  void commit(std::span<const int32_t> path) {
    call_.commit.assign(path.begin(), path.end());
    call_.delta.assign(1, last_root_);
    for (int32_t node : path) {
      if (node < 1 || node > static_cast<int32_t>(last_tokens_.size()))
        throw specd::sdk::PluginError(
            SPECD_STATUS_INVALID_ARGUMENT,
            "commit names node " + std::to_string(node) + ", not in the last tree");
      call_.delta.push_back(last_tokens_[node - 1]);
    }
    sequence_.insert(sequence_.end(), call_.delta.begin(), call_.delta.end());
  }

 private:
  // A new session for a lost one; the server must still serve the same vocabulary.
  void reopen() {
    remote::SessionInfo fresh = client_->open();
    if (fresh.vocab_digest != session_.vocab_digest || fresh.vocab_size != session_.vocab_size)
      throw remote::RemoteError(client_->endpoint() +
                                ": the server now serves another vocabulary than when this run "
                                "began (restarted with another model?)");
    session_ = fresh;
  }

  std::unique_ptr<remote::Client> client_;
  remote::SessionInfo session_;
  remote::VerifyCall call_;        // the next request, built by begin / commit
  std::vector<int32_t> sequence_;  // every committed token: replayed into a new session
  specd_token last_root_ = 0;
  std::vector<int32_t> last_tokens_;
  double last_overhead_s_ = 0;
};

RemoteVerifier& self(void* v) {
  return *static_cast<RemoteVerifier*>(v);
}

const specd_host* host() {
  return specd::sdk::detail::plugin_host();
}

const specd_verifier_vtable kVtable = {
    sizeof(specd_verifier_vtable),
    0,
    0,
    [](const specd_host* h, const specd_params* params, const char*, void** out) {
      return specd::sdk::guard(h, [&] { *out = new RemoteVerifier(specd::sdk::Params(params)); });
    },
    [](void* v) { delete static_cast<RemoteVerifier*>(v); },
    [](void* v, specd_verifier_info* info) {
      return specd::sdk::guard(host(), [&] { self(v).info(*info); });
    },
    [](void* v, const specd_token* tokens, uint32_t n, float* hidden) {
      return specd::sdk::guard(
          host(), [&] { self(v).begin(std::span<const specd_token>(tokens, n), hidden); });
    },
    [](void* v, specd_token root, const specd_draft_tree* tree, float* logits, float* hidden) {
      return specd::sdk::guard(host(), [&] { self(v).verify(root, *tree, logits, hidden); });
    },
    [](void* v, const int32_t* path, uint32_t n) {
      return specd::sdk::guard(host(), [&] { self(v).commit(std::span<const int32_t>(path, n)); });
    },
};

}  // namespace

SPECD_DEFINE_PLUGIN_ENTRY(SPECD_KIND_VERIFIER, kId, "remote", "0.1.0",
                          "the target model of a specd serve instance, over HTTP (/v1/verify)",
                          &kVtable)
