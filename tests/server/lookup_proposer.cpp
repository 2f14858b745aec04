// A test proposer compiled in two forms with one drafting rule (a chain of the k tokens that
// followed the previous occurrence of the last token; deterministic, no q):
//
//   SPECD_TEST_BATCHED 0: per sequence, built as ABI 0.4 would have built it (descriptor minor
//                         4, a vtable that ends at `commit`): the host's adapter drives it.
//   SPECD_TEST_BATCHED 1: batched (SPECD_BATCH_PROPOSER_PLUGIN). Parameters: `fail_token`
//                         (an item whose sequence holds that token fails, alone) and `report`
//                         (a file that gets the most items one propose_batch call received,
//                         written when the proposer is destroyed).
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

namespace {

// The chain after the previous occurrence of the last token (at most `k` tokens).
uint32_t lookup(std::span<const specd_token> seq, uint32_t k, specd_draft_output& out) {
  out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
  out.has_q = 0;
  out.n_nodes = 0;
  if (seq.size() < 2) return 0;
  const specd_token last = seq.back();
  for (size_t at = seq.size() - 1; at-- > 0;) {
    if (seq[at] != last) continue;
    uint32_t n = 0;
    for (size_t j = at + 1; j < seq.size() - 1 && n < std::min(k, out.capacity); ++j, ++n) {
      out.tokens[n] = seq[j];
      out.parents[n] = static_cast<int32_t>(n);
    }
    out.n_nodes = n;
    return n;
  }
  return 0;
}

#if SPECD_TEST_BATCHED == 0

struct Lookup {
  uint32_t k;
};

specd_status* create(const specd_host*, const specd_params*, const char*,
                     const specd_proposer_context* context, const specd_transform*, void** out) {
  *out = new Lookup{context->draft_length};
  return nullptr;
}
void destroy(void* p) {
  delete static_cast<Lookup*>(p);
}
specd_status* begin(void*, const specd_token*, uint32_t, const float*) {
  return nullptr;
}
specd_status* propose(void* p, const specd_token* tokens, uint32_t n, specd_rng*,
                      specd_draft_output* out) {
  lookup(std::span<const specd_token>(tokens, n), static_cast<Lookup*>(p)->k, *out);
  return nullptr;
}
specd_status* commit(void*, const specd_token*, uint32_t, specd_token, const float*) {
  return nullptr;
}

// The 0.4 layout: the vtable ends at commit.
const specd_proposer_vtable g_vtable = {offsetof(specd_proposer_vtable, sequence_open),
                                        0,
                                        0,
                                        "exact-match",
                                        &create,
                                        &destroy,
                                        &begin,
                                        &propose,
                                        &commit,
                                        nullptr,
                                        nullptr,
                                        nullptr,
                                        nullptr,
                                        nullptr};
const void* get_vtable(specd_plugin_kind kind) {
  return kind == SPECD_KIND_PROPOSER ? &g_vtable : nullptr;
}
const specd_plugin_descriptor g_descriptor = {sizeof(specd_plugin_descriptor),
                                              SPECD_ABI_VERSION_MAJOR,
                                              4,
                                              SPECD_KIND_PROPOSER,
                                              "org.specd.test.lookup-old",
                                              "0.0.1",
                                              "lookup-old",
                                              "test proposer of ABI 0.4 (per sequence)",
                                              nullptr,
                                              nullptr,
                                              &get_vtable};

}  // namespace

extern "C" SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(uint32_t, uint32_t) {
  return &g_descriptor;
}

#else

class BatchedLookup {
 public:
  struct Sequence {};

  BatchedLookup(specd::sdk::Host, const specd::sdk::Params& params, const char*,
                const specd_proposer_context& context, const specd_transform&)
      : k_(context.draft_length) {
    params.require_known({"fail_token", "report"});
    fail_token_ = static_cast<int32_t>(params.get_int("fail_token", -1));
    report_ = params.get_string("report", "");
  }
  ~BatchedLookup() {
    if (report_.empty()) return;
    if (FILE* f = std::fopen(report_.c_str(), "w")) {
      std::fprintf(f, "%u\n", most_items_);
      std::fclose(f);
    }
  }

  std::unique_ptr<Sequence> open() { return std::make_unique<Sequence>(); }
  void begin(Sequence&, std::span<const specd_token>, const float*) {}
  void commit(Sequence&, std::span<const specd_token>, specd_token, const float*) {}

  void propose(std::span<specd::sdk::ProposeItem<Sequence> > items) {
    most_items_ = std::max(most_items_, static_cast<uint32_t>(items.size()));
    specd::sdk::for_each_item(items, [&](specd::sdk::ProposeItem<Sequence>& item) {
      if (std::find(item.tokens.begin(), item.tokens.end(), fail_token_) != item.tokens.end())
        throw specd::sdk::invalid_argument("lookup was asked to fail for token " +
                                           std::to_string(fail_token_));
      lookup(item.tokens, k_, item.out);
    });
  }

 private:
  uint32_t k_;
  int32_t fail_token_ = -1;
  std::string report_;
  uint32_t most_items_ = 0;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(BatchedLookup, "org.specd.test.lookup-batched", "lookup-batched",
                            "0.0.1", "test proposer, batched", 0, "exact-match")

#endif
