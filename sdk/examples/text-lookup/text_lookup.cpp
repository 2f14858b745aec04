// A proposer that drafts in text through the host's text service (specd_text_service): it
// decodes the sequence, finds the latest earlier occurrence of its last `match` bytes, and
// drafts the ids of the text that followed it, as encoded on its own. What it proves: a
// text-based proposer needs no tokenizer of its own, so it drafts for any target.
//
// Parameters: match (int, bytes of the tail to look up; default 6).
#include <specd/cpp/plugin.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace {

class TextLookupProposer {
 public:
  TextLookupProposer(specd::sdk::Host, const specd::sdk::Params& params, const char*,
                     const specd_proposer_context& context, const specd_transform&)
      : k_(context.draft_length), text_(context) {
    params.require_known({"match"});
    const int64_t match = params.get_int("match", 6);
    if (match < 1 || match > 256)
      throw specd::sdk::invalid_argument("text-lookup: match must be in [1, 256]");
    match_ = static_cast<size_t>(match);
    if (!text_.available())
      throw specd::sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                                    "text-lookup needs the host's text service");
  }

  void begin(std::span<const specd_token>, const float*) {}

  void propose(std::span<const specd_token> seq, specd_rng*, specd_draft_output& out) {
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    out.n_nodes = 0;
    const std::string text = text_.decode(seq);
    if (text.size() <= match_) return;
    const std::string_view all(text);
    const std::string_view tail = all.substr(all.size() - match_);
    // The latest occurrence that ends before the tail does.
    const size_t at = all.substr(0, all.size() - 1).rfind(tail);
    if (at == std::string_view::npos) return;
    const std::string_view follows = all.substr(at + match_, 64);
    if (follows.empty()) return;
    for (specd_token id : text_.encode(follows)) {
      if (out.n_nodes >= k_ || out.n_nodes >= out.capacity) break;
      out.tokens[out.n_nodes] = id;
      out.parents[out.n_nodes] = static_cast<int32_t>(out.n_nodes);  // a chain from the root
      ++out.n_nodes;
    }
  }

  void commit(std::span<const specd_token>, specd_token, const float*) {}

 private:
  uint32_t k_;
  specd::sdk::TextService text_;
  size_t match_ = 6;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(TextLookupProposer, "com.example.propose.text-lookup", "text-lookup", "0.1.0",
                      "prompt lookup in text through the host's text service", 0, "exact-match")
