// One test per edge case every rule must handle, through the loaded plugins.
#include <doctest/doctest.h>

#include <cmath>

#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"
#include "rule_fixture.hpp"

namespace {

using specd::AcceptOutcome;
using specd::OwnedDraft;
using Row = std::vector<double>;

// A chain draft: tokens[i] is node i+1; p_rows and q_rows have tokens.size() + 1 rows.
OwnedDraft chain(std::vector<specd_token> tokens, std::vector<Row> p_rows, std::vector<Row> q_rows,
                 specd_sibling_scheme scheme = SPECD_SIBLINGS_IID) {
  OwnedDraft d;
  d.vocab = static_cast<uint32_t>(p_rows[0].size());
  d.scheme = scheme;
  d.with_q = !q_rows.empty();
  d.tokens = tokens;
  for (size_t i = 0; i < tokens.size(); ++i) d.parents.push_back(static_cast<int32_t>(i));
  for (const Row& r : p_rows) d.p.insert(d.p.end(), r.begin(), r.end());
  for (const Row& r : q_rows) d.q.insert(d.q.end(), r.begin(), r.end());
  return d;
}

std::vector<AcceptOutcome> outcomes(const char* rule, const OwnedDraft& d) {
  return specd::test::make_rule(rule).outcomes(d.tree(), d.target());
}

// P(first emitted token = y) over the outcomes of one fixed draft.
Row first_token(const OwnedDraft& d, const std::vector<AcceptOutcome>& outs) {
  Row first(d.vocab, 0.0);
  for (const auto& o : outs)
    first[o.path.empty() ? o.next_token : d.tokens[o.path[0] - 1]] += o.probability;
  return first;
}

// Mixes the first-token distributions of the drafts x ~ q[0] of a one-token chain.
Row mixed_first_token(const char* rule, const Row& p0, const Row& q0, const Row& p1) {
  Row total(p0.size(), 0.0);
  for (specd_token x = 0; x < static_cast<specd_token>(q0.size()); ++x) {
    if (!(q0[x] > 0)) continue;
    const OwnedDraft d = chain({x}, {p0, p1}, {q0, q0});
    const Row f = first_token(d, outcomes(rule, d));
    for (size_t y = 0; y < f.size(); ++y) total[y] += q0[x] * f[y];
  }
  return total;
}

void check_equal(const Row& a, const Row& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

const Row kSpread = {0.2, 0.5, 0.3};

}  // namespace

TEST_CASE("edge: q(x) = 0 where p(x) > 0") {
  const Row p = {0.5, 0.5, 0.0}, q = {1.0, 0.0, 0.0};
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    check_equal(mixed_first_token(rule, p, q, kSpread), p);  // token 1 comes from the residual
  }
  // A draft token with q = 0 cannot have been sampled from q: the host refuses it ...
  const OwnedDraft bad = chain({1}, {p, kSpread}, {q, q});
  CHECK_THROWS_AS(specd::validate_tree(bad.tree(), 3, "proposer"), specd::Error);
  // ... and a rule meeting one anyway rejects it without dividing by zero.
  for (const auto& o : outcomes("rejection", bad)) {
    CHECK(o.path.empty());
    CHECK(std::isfinite(o.probability));
  }
}

TEST_CASE("edge: p(x) = 0 where q(x) > 0") {
  const Row p = {0.6, 0.0, 0.4}, q = {0.2, 0.5, 0.3};
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    check_equal(mixed_first_token(rule, p, q, kSpread), p);
    const OwnedDraft d = chain({1}, {p, kSpread}, {q, q});
    for (const auto& o : outcomes(rule, d)) CHECK(o.path.empty());  // never accepted
  }
}

TEST_CASE("edge: p = q accepts everything and never samples the empty residual") {
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    const OwnedDraft d = chain({1, 2}, {kSpread, kSpread, kSpread}, {kSpread, kSpread, kSpread});
    const auto outs = outcomes(rule, d);
    double accepted_all = 0;
    for (const auto& o : outs) {
      CHECK(std::isfinite(o.probability));
      if (o.path.size() == 2) accepted_all += o.probability;
    }
    CHECK(accepted_all == doctest::Approx(1.0));
    check_equal(mixed_first_token(rule, kSpread, kSpread, kSpread), kSpread);
  }
}

TEST_CASE("edge: one-hot p") {
  const Row p = {0.0, 1.0, 0.0};
  for (const char* rule : {"rejection", "tree-rejection"})
    check_equal(mixed_first_token(rule, p, kSpread, kSpread), p);
  for (const char* rule : {"exact-match", "greedy"}) {
    const OwnedDraft d = chain({1}, {p, kSpread}, {}, SPECD_SIBLINGS_DETERMINISTIC);
    const auto outs = outcomes(rule, d);
    INFO(rule);
    double accepted = 0;
    for (const auto& o : outs)
      if (o.path.size() == 1) accepted += o.probability;
    CHECK(accepted == doctest::Approx(1.0));
  }
}

TEST_CASE("edge: one-hot q (a deterministic draft written as a distribution)") {
  const Row q = {0.0, 0.0, 1.0};
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    check_equal(mixed_first_token(rule, kSpread, q, kSpread), kSpread);
    const OwnedDraft d = chain({2}, {kSpread, kSpread}, {q, q});
    double accepted = 0;
    for (const auto& o : outcomes(rule, d))
      if (!o.path.empty()) accepted += o.probability;
    CHECK(accepted == doctest::Approx(0.3));  // min(1, p/q) = p(2)
  }
}

TEST_CASE("edge: first-node rejection emits the residual") {
  // p = (.2, .8), q = (.8, .2), draft token 0: accept with .25; else residual = (0, 1).
  const Row p = {0.2, 0.8}, q = {0.8, 0.2};
  const OwnedDraft d = chain({0, 1}, {p, p, p}, {q, q, q});
  double rejected_first = 0;
  for (const auto& o : outcomes("rejection", d)) {
    if (o.path.empty()) {
      CHECK(o.next_token == 1);
      rejected_first += o.probability;
    }
  }
  CHECK(rejected_first == doctest::Approx(0.75));
}

TEST_CASE("edge: full acceptance ends with the bonus token from p at the leaf") {
  const Row leaf = {0.1, 0.0, 0.9};
  const OwnedDraft d = chain({0, 1}, {kSpread, kSpread, leaf}, {kSpread, kSpread, kSpread});
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    Row bonus(3, 0.0);
    for (const auto& o : outcomes(rule, d)) {
      REQUIRE(o.path.size() == 2);  // p == q: always accepted
      bonus[o.next_token] += o.probability;
    }
    check_equal(bonus, leaf);
  }
  specd::Rng rng(3);
  const auto r = specd::test::make_rule("exact-match").accept(d.tree(), d.target(), rng);
  CHECK(r.path.size() <= 2);
}

TEST_CASE("edge: k = 1") {
  const Row p = {0.3, 0.3, 0.4}, q = {0.6, 0.2, 0.2};
  for (const char* rule : {"rejection", "tree-rejection"}) {
    INFO(rule);
    check_equal(mixed_first_token(rule, p, q, kSpread), p);
  }
}

TEST_CASE("edge: an empty draft emits one token from p at the root") {
  OwnedDraft d = chain({}, {kSpread}, {kSpread});
  for (const char* rule : {"rejection", "tree-rejection", "exact-match", "typical"}) {
    INFO(rule);
    check_equal(first_token(d, outcomes(rule, d)), kSpread);
  }
  const auto g = outcomes("greedy", d);
  REQUIRE(g.size() == 1);
  CHECK(g[0].next_token == 1);
}
