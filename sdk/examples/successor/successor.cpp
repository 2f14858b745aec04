// A proposer that needs no model: it drafts what followed the root token the last times it
// appeared in the sequence. With `shape = "chain"` it follows the most recent successor k
// times; with `shape = "tree"` the root gets up to `branches` children (its most recent
// distinct successors), each continued as a chain, k nodes deep in all.
//
// The drafts are deterministic (no q), so any rule that accepts deterministic siblings can
// check them; the default, exact-match, keeps the target's output distribution exactly.
//
// Written in the batched form (ABI 0.5): one object drafts for every sequence the host runs
// (the server's batch, or `specd run`'s one), each sequence's state behind a handle. This
// one keeps no state per sequence; a model-based proposer would keep its KV cache there and
// run one batched model pass per draft step over all the items.
#include <specd/cpp/plugin.hpp>

#include <memory>
#include <span>
#include <vector>

namespace {

class Successor {
 public:
  Successor(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
            const specd_proposer_context& context, const specd_transform& transform)
      : tree_(params.get_choice("shape", {"chain", "tree"}) == "tree"),
        branches_(params.get_int("branches", 2)),
        depth_(context.draft_length) {
    (void)host;       // nothing to log, no status to build: exceptions become statuses
    (void)transform;  // drafts are deterministic: no q rows to transform
    params.require_known({"shape", "branches"});
    if (model_path) throw specd::sdk::invalid_argument("successor reads no model; remove 'model'");
    if (branches_ < 1 || branches_ > 8) throw params.invalid("branches", "must be in 1..8");
    if (!tree_ && params.find("branches"))
      throw params.invalid("branches", "applies only to shape = \"tree\"");
    if (depth_ < 1) throw specd::sdk::invalid_argument("successor needs k >= 1");
  }

  // One sequence's state: none here (every call gets the whole accepted sequence), so
  // there is nothing to set up (begin) or to roll back (commit). A proposer that caches state
  // keeps it in its Sequence and updates it in commit.
  struct Sequence {};
  std::unique_ptr<Sequence> open() { return std::make_unique<Sequence>(); }
  void begin(Sequence&, std::span<const specd_token> prompt, const float* hidden) {
    (void)prompt;
    (void)hidden;
  }
  void commit(Sequence&, std::span<const specd_token> accepted, specd_token next,
              const float* hidden) {
    (void)accepted;
    (void)next;
    (void)hidden;
  }

  // Drafts for every item of the call; one item's failure (an exception) fails that sequence
  // alone.
  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    specd::sdk::for_each_item(items, [&](specd::sdk::ProposeItem<Sequence>& item) {
      draft(item.tokens, item.out);  // deterministic: item.rng is not needed
    });
  }

 private:
  void draft(std::span<const specd_token> sequence, specd_draft_output& out) const {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    if (sequence.empty()) return;
    const specd_token root = sequence.back();
    const size_t width = tree_ ? static_cast<size_t>(branches_) : 1;
    const std::vector<specd_token> first = successors(sequence, root, width);
    for (specd_token token : first) {
      // One branch: a child of the root, then a chain of most recent successors.
      int32_t parent = 0;
      specd_token current = token;
      for (uint32_t level = 0; level < depth_ && out.n_nodes < out.capacity; ++level) {
        out.tokens[out.n_nodes] = current;
        out.parents[out.n_nodes] = parent;
        parent = static_cast<int32_t>(++out.n_nodes);  // node ids start at 1
        const std::vector<specd_token> next = successors(sequence, current, 1);
        if (next.empty()) break;
        current = next.front();
      }
    }
  }

  // Up to `limit` distinct tokens that followed `token` in `sequence`, most recent first.
  // The last position is the root itself, whose successor is what we are drafting.
  static std::vector<specd_token> successors(std::span<const specd_token> sequence,
                                             specd_token token, size_t limit) {
    std::vector<specd_token> found;
    for (size_t i = sequence.size() - 1; i-- > 0 && found.size() < limit;) {
      if (sequence[i] != token) continue;
      const specd_token after = sequence[i + 1];
      bool seen = false;
      for (specd_token f : found) seen = seen || f == after;
      if (!seen) found.push_back(after);
    }
    return found;
  }

  bool tree_;
  int64_t branches_;
  uint32_t depth_;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(Successor, "com.example.propose.successor", "successor", "1.1.0",
                            "drafts what followed the root token before: a chain or a small "
                            "tree",
                            SPECD_PROPOSER_TREES, "exact-match")
