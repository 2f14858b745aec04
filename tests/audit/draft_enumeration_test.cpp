// Draft enumeration: probabilities under each sibling scheme.
#include <doctest/doctest.h>

#include <set>

#include "audit/draft_enumeration.hpp"

namespace {

const std::vector<double> kRow = {0.5, 0.3, 0.2, 0.0};

specd::RowFn fixed() {
  return [](std::span<const specd_token>) { return kRow; };
}

}  // namespace

TEST_CASE("iid drafts: V^nodes drafts whose probabilities sum to 1") {
  specd::DraftSpec spec;
  spec.branching = {2, 1};
  spec.scheme = SPECD_SIBLINGS_IID;
  spec.vocab = 4;
  double total = 0;
  size_t count = 0;
  specd::enumerate_drafts(spec, fixed(), fixed(), [&](const specd::OwnedDraft& d, double w) {
    CHECK(d.n_nodes() == 4);
    CHECK(d.parents == std::vector<int32_t>{0, 0, 1, 2});  // breadth-first numbering
    total += w;
    ++count;
  });
  CHECK(count == 81);  // 3 tokens of positive q, 4 nodes
  CHECK(total == doctest::Approx(1.0));
}

TEST_CASE("without-replacement drafts: distinct siblings, renormalised probabilities") {
  specd::DraftSpec spec;
  spec.branching = {2};
  spec.scheme = SPECD_SIBLINGS_WITHOUT_REPLACEMENT;
  spec.vocab = 4;
  double total = 0, p01 = 0;
  specd::enumerate_drafts(spec, fixed(), fixed(), [&](const specd::OwnedDraft& d, double w) {
    CHECK(d.tokens[0] != d.tokens[1]);
    if (d.tokens[0] == 0 && d.tokens[1] == 1) p01 = w;
    total += w;
  });
  CHECK(total == doctest::Approx(1.0));
  CHECK(p01 == doctest::Approx(0.5 * 0.3 / 0.5));
  // More siblings than tokens with q > 0: the extra sibling is not created.
  spec.branching = {4};
  specd::enumerate_drafts(spec, fixed(), fixed(),
                          [&](const specd::OwnedDraft& d, double) { CHECK(d.n_nodes() == 3); });
}

TEST_CASE("deterministic drafts: the top tokens of q, probability 1") {
  specd::DraftSpec spec;
  spec.branching = {2, 1};
  spec.scheme = SPECD_SIBLINGS_DETERMINISTIC;
  spec.with_q = false;
  spec.vocab = 4;
  int count = 0;
  specd::enumerate_drafts(spec, fixed(), fixed(), [&](const specd::OwnedDraft& d, double w) {
    CHECK(w == 1.0);
    CHECK(d.tokens == std::vector<specd_token>{0, 1, 0, 0});
    CHECK(d.tree().q == nullptr);
    ++count;
  });
  CHECK(count == 1);
  specd::Rng rng(1);
  const auto d = specd::sample_draft(spec, fixed(), fixed(), rng);
  CHECK(d.tokens == std::vector<specd_token>{0, 1, 0, 0});
}
