// Exact checks of every installed acceptance rule that declares itself lossless.
//
// Formulation (what is proved and what is checked). Fix a draft shape of depth D and a target
// given as next-token rows p(. | path) for every path. One round of a rule emits a sequence
// E = (accepted draft tokens, next token) of length 1..D+1. Continue E with plain sampling
// from the target until it has D+1 tokens. The rule is exact iff, for every shape and every
// p, q, this continued sequence is distributed as D+1 tokens of plain target sampling:
//   sum_{draft} P(draft) sum_{outcomes o} P(o | draft) P_target(continuation | E(o))
//     = prod_j p(y_j | y_<j)   for every y in V^(D+1).
// (Repeating rounds is then exact by induction: each round starts from the committed prefix
// and only the target's conditional law matters.) Marginalising over y_2.. gives the weaker
// first-token check, sum P(first emitted = y) = p(y | root), reported separately below.
// The draft is itself random: every draft of the shape is enumerated with its probability
// under the sibling scheme (audit/draft_enumeration.hpp), and the rule's own `outcomes` gives
// P(o | draft). Both sides are computed exactly; the tolerance 1e-12 only absorbs rounding.
// Sizes are bounded (V^nodes <= 4096 drafts, V^(D+1) <= 40000 sequences) to run in seconds.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "acceptance/tree_validation.hpp"
#include "rule_fixture.hpp"

namespace {

using specd::AcceptanceRule;
using specd::OwnedDraft;
using specd::test::RandomModel;

struct Check {
  double first_token_error = 0;  // max |P(first = y) - p(y | root)|
  double joint_error = 0;        // max over V^(D+1) of |P_spec(y) - P_target(y)|
};

// Number of nodes of a shape.
uint32_t node_count(const std::vector<uint32_t>& branching) {
  uint32_t total = 0, level = 1;
  for (uint32_t b : branching) {
    level *= b;
    total += level;
  }
  return total;
}

using WeightedSequences = std::vector<std::pair<std::vector<specd_token>, double>>;

// Every sequence of `frontier` extended by each token the target gives positive
// probability, weighted by that probability.
WeightedSequences extend_by_target(const WeightedSequences& frontier, RandomModel& model,
                                   uint32_t V) {
  WeightedSequences next;
  for (const auto& [prefix, pr] : frontier) {
    const std::vector<double> row = model.p(prefix);
    for (uint32_t y = 0; y < V; ++y) {
      if (!(row[y] > 0)) continue;
      auto ext = prefix;
      ext.push_back(static_cast<specd_token>(y));
      next.push_back({ext, pr * row[y]});
    }
  }
  return next;
}

Check check_exact(const AcceptanceRule& rule, const specd::DraftSpec& spec, RandomModel& model) {
  const uint32_t V = spec.vocab;
  const size_t D = spec.branching.size();
  std::map<std::vector<specd_token>, double> emitted;  // E -> probability
  specd::enumerate_drafts(spec, model.q_fn(), model.p_fn(), [&](const OwnedDraft& d, double w) {
    const specd_draft_tree tree = d.tree();
    const specd_target_dists target = d.target();
    specd::validate_tree(tree, V, "test proposer");
    specd::validate_target(target, tree, "test verifier");
    for (const auto& o : rule.outcomes(tree, target)) {
      std::vector<specd_token> e;
      for (int32_t node : o.path) e.push_back(d.tokens[node - 1]);
      e.push_back(o.next_token);
      emitted[e] += w * o.probability;
    }
  });
  Check c;
  std::vector<double> first(V, 0.0);
  std::map<std::vector<specd_token>, double> spec_joint;
  for (const auto& [e, prob] : emitted) {
    first[e[0]] += prob;
    // Continue e with the target up to D+1 tokens.
    WeightedSequences frontier{{e, prob}};
    while (frontier.front().first.size() < D + 1) frontier = extend_by_target(frontier, model, V);
    for (const auto& [seq, pr] : frontier) spec_joint[seq] += pr;
  }
  const std::vector<double> root = model.p({});
  for (uint32_t y = 0; y < V; ++y)
    c.first_token_error = std::max(c.first_token_error, std::fabs(first[y] - root[y]));
  // Target joint over V^(D+1) by the chain rule; compare on the union of supports.
  WeightedSequences frontier{{{}, 1.0}};
  for (size_t j = 0; j <= D; ++j) frontier = extend_by_target(frontier, model, V);
  for (const auto& [seq, pr] : frontier) {
    auto it = spec_joint.find(seq);
    const double got = it == spec_joint.end() ? 0.0 : it->second;
    c.joint_error = std::max(c.joint_error, std::fabs(got - pr));
    if (it != spec_joint.end()) spec_joint.erase(it);
  }
  for (const auto& [seq, pr] : spec_joint) c.joint_error = std::max(c.joint_error, pr);
  return c;
}

double power(uint32_t base, uint32_t exp) {
  return std::pow(double(base), double(exp));
}

// Random shapes: chains of depth 1..4 for every rule, small trees for tree rules.
std::vector<std::vector<uint32_t>> shapes_for(const AcceptanceRule& rule) {
  std::vector<std::vector<uint32_t>> s = {{1}, {1, 1}, {1, 1, 1}, {1, 1, 1, 1}};
  if (rule.supports_trees()) {
    const std::vector<std::vector<uint32_t>> trees = {{2},    {3},    {2, 1},    {1, 2},
                                                      {2, 2}, {3, 1}, {2, 1, 1}, {1, 2, 1}};
    s.insert(s.end(), trees.begin(), trees.end());
  }
  return s;
}

// Runs `cases` random cases of `rule`; returns the worst errors seen and the number run.
Check run_cases(const AcceptanceRule& rule, bool one_hot_p, int cases, uint64_t seed, int& run) {
  Check worst;
  std::mt19937_64 rng(seed);
  const auto shapes = shapes_for(rule);
  const auto schemes = specd::test::schemes_of(rule);
  REQUIRE(!schemes.empty());
  run = 0;
  for (int i = 0; i < cases; ++i) {
    const auto& shape = shapes[rng() % shapes.size()];
    const specd_sibling_scheme scheme = schemes[rng() % schemes.size()];
    const uint32_t nodes = node_count(shape);
    // Largest V in [2, 16] that keeps the enumeration bounded.
    uint32_t vmax = 2;
    while (vmax < 16 && power(vmax + 1, nodes) <= 4096 &&
           power(vmax + 1, uint32_t(shape.size()) + 1) <= 40000)
      ++vmax;
    const uint32_t V = 2 + static_cast<uint32_t>(rng() % (vmax - 1));
    specd::DraftSpec spec;
    spec.branching = shape;
    spec.scheme = scheme;
    spec.vocab = V;
    spec.with_q = scheme != SPECD_SIBLINGS_DETERMINISTIC || rule.needs_q();
    RandomModel model(V, rng(), one_hot_p);
    const Check c = check_exact(rule, spec, model);
    INFO("rule ", rule.name(), " case ", i, " V=", V, " depth ", shape.size(), " nodes ", nodes,
         " scheme ", scheme);
    CHECK(c.first_token_error < 1e-12);
    CHECK(c.joint_error < 1e-12);
    worst.first_token_error = std::max(worst.first_token_error, c.first_token_error);
    worst.joint_error = std::max(worst.joint_error, c.joint_error);
    ++run;
  }
  return worst;
}

// Runs `cases` random cases of every installed rule labelled `label` that gives its outcomes
// (the n-th such rule seeded with seed_base + n), reporting each one's worst errors; returns
// how many rules ran.
int run_rules_labelled(specd_lossless_label label, bool one_hot_p, int cases, uint64_t seed_base) {
  int rules = 0;
  for (const specd::LoadedPlugin* plugin : specd::test::acceptance_plugins()) {
    AcceptanceRule rule(*plugin, nullptr);
    if (rule.label() != label || !rule.has_outcomes()) continue;
    ++rules;
    int run = 0;
    const Check worst = run_cases(rule, one_hot_p, cases, seed_base + rules, run);
    MESSAGE(rule.name(), ": ", run, " cases, worst first-token error ", worst.first_token_error,
            ", worst joint error ", worst.joint_error);
  }
  return rules;
}

}  // namespace

TEST_CASE("every exact rule preserves the target distribution on random small cases") {
  const int exact_rules = run_rules_labelled(SPECD_LABEL_EXACT, false, 400, 0x5eed0001);
  CHECK(exact_rules >= 3);  // rejection, tree-rejection, exact-match at least
}

TEST_CASE("every greedy-exact rule preserves the target distribution at temperature 0") {
  // At temperature 0 the target rows are one-hot (argmax); the draft rows stay arbitrary.
  const int greedy_rules = run_rules_labelled(SPECD_LABEL_GREEDY_EXACT, true, 300, 0x5eed1000);
  CHECK(greedy_rules >= 1);
}

TEST_CASE("the check is strong enough to catch a lossy rule") {
  // typical and relaxed-topk are declared lossy; on generic random cases they must fail it.
  for (const char* name : {"typical", "relaxed-topk"}) {
    AcceptanceRule rule = specd::test::make_rule(name);
    specd::DraftSpec spec;
    spec.branching = {1, 1};
    spec.scheme = SPECD_SIBLINGS_IID;
    spec.vocab = 4;
    double worst = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      RandomModel model(4, seed);
      worst = std::max(worst, check_exact(rule, spec, model).joint_error);
    }
    INFO(name);
    CHECK(worst > 1e-3);
  }
}
