// A test proposer that knows the right answer. Given the plain-decoding continuation (the
// `oracle` parameter: comma-separated token ids), it drafts trees whose main branch follows
// the oracle but is corrupted at a random depth, plus wrong siblings at random nodes. The
// accepted path therefore ends at every possible position across rounds, which exercises
// KV compaction and proposer rollback; at temperature 0 the output must still equal the
// oracle token for token.
//
// Parameters: oracle (string, required), prompt_length (int, required), seed (int),
// tree (bool: add siblings), vocab (int: wrong tokens are drawn below it).
#include <specd/cpp/plugin.hpp>

#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

class OracleProposer {
 public:
  OracleProposer(specd::sdk::Host, const specd::sdk::Params& params, const char*,
                 const specd_proposer_context& context, const specd_transform&)
      : k_(context.draft_length), vocab_(context.vocab_size) {
    params.require_known({"oracle", "prompt_length", "seed", "tree"});
    std::stringstream list(params.get_string("oracle", ""));
    std::string item;
    while (std::getline(list, item, ',')) oracle_.push_back(std::stoi(item));
    prompt_length_ = params.get_int("prompt_length", -1);
    if (oracle_.empty() || prompt_length_ < 1)
      throw specd::sdk::invalid_argument("oracle proposer needs oracle and prompt_length");
    rng_.seed(static_cast<uint64_t>(params.get_int("seed", 1)));
    tree_ = params.get_bool("tree", false);
  }

  void begin(std::span<const specd_token>, const float*) {}

  void propose(std::span<const specd_token> seq, specd_rng*, specd_draft_output& out) {
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    out.n_nodes = 0;
    // The oracle token at index j is the (j+1)-th generated token; the root is the last one
    // already emitted, so the next correct token is oracle[generated].
    size_t generated = seq.size() - static_cast<size_t>(prompt_length_);
    uint32_t depth = 1 + static_cast<uint32_t>(rng_() % k_);
    uint32_t corrupt_at = static_cast<uint32_t>(rng_() % (depth + 2));  // may be past the end
    std::vector<int32_t> chain;  // node ids of the main branch
    for (uint32_t d = 0; d < depth && out.n_nodes < out.capacity; ++d) {
      size_t idx = generated + d;
      specd_token t = idx < oracle_.size() ? oracle_[idx] : wrong_token(-1);
      if (d == corrupt_at) t = wrong_token(t);
      out.tokens[out.n_nodes] = t;
      out.parents[out.n_nodes] = chain.empty() ? 0 : chain.back();
      chain.push_back(static_cast<int32_t>(++out.n_nodes));
    }
    if (!tree_) return;
    // Wrong siblings under random nodes of the main branch (or the root).
    uint32_t extras = static_cast<uint32_t>(rng_() % (k_ + 1));
    for (uint32_t e = 0; e < extras && out.n_nodes < out.capacity; ++e) {
      uint32_t at = static_cast<uint32_t>(rng_() % (chain.size() + 1));  // 0 = root
      int32_t parent = at == 0 ? 0 : chain[at - 1];
      size_t idx = generated + at;
      specd_token right = idx < oracle_.size() ? oracle_[idx] : -1;
      out.tokens[out.n_nodes] = wrong_token(right);
      out.parents[out.n_nodes] = parent;
      ++out.n_nodes;
    }
    // Keep parents topological: all extras come after the nodes they hang from.
  }

  void commit(std::span<const specd_token>, specd_token, const float*) {}

 private:
  specd_token wrong_token(specd_token avoid) {
    specd_token t;
    do t = static_cast<specd_token>(rng_() % vocab_);
    while (t == avoid);
    return t;
  }

  uint32_t k_;
  uint32_t vocab_;
  std::vector<specd_token> oracle_;
  int64_t prompt_length_ = 0;
  std::mt19937_64 rng_;
  bool tree_ = false;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(OracleProposer, "org.specd.test.oracle", "oracle", "0.0.1",
                      "test proposer: oracle continuation with random corruption",
                      SPECD_PROPOSER_TREES, "exact-match")
