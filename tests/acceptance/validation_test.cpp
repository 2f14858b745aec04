// Host-side validation, pairing checks, the lossy refusal, plugin parameters and the cut of
// emitted tokens.
#include <doctest/doctest.h>

#include <string>

#include "acceptance/cut_emitted.hpp"
#include "acceptance/pairing.hpp"
#include "acceptance/result_validation.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"
#include "rule_fixture.hpp"

namespace {

bool mentions(const std::exception& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

specd::OwnedDraft small_tree() {
  // root -> 1 (tok 0), 2 (tok 1); 1 -> 3 (tok 2)
  specd::OwnedDraft d;
  d.vocab = 3;
  d.scheme = SPECD_SIBLINGS_IID;
  d.tokens = {0, 1, 2};
  d.parents = {0, 0, 1};
  const std::vector<double> row = {0.2, 0.5, 0.3};
  for (int i = 0; i < 4; ++i) {
    d.q.insert(d.q.end(), row.begin(), row.end());
    d.p.insert(d.p.end(), row.begin(), row.end());
  }
  return d;
}

}  // namespace

TEST_CASE("validate_tree accepts a good tree and names each problem") {
  specd::OwnedDraft d = small_tree();
  CHECK_NOTHROW(specd::validate_tree(d.tree(), 3, "p"));
  CHECK(specd::tree_depth(d.tree()) == 2);
  CHECK_FALSE(specd::is_chain(d.tree()));

  auto bad = d;
  bad.parents[1] = 2;  // parent after the node
  CHECK(error_of([&] { specd::validate_tree(bad.tree(), 3, "prop"); }).find("parent") !=
        std::string::npos);
  bad = d;
  bad.tokens[2] = 3;
  CHECK(error_of([&] { specd::validate_tree(bad.tree(), 3, "prop"); }).find("vocabulary") !=
        std::string::npos);
  bad = d;
  bad.q[1] = 0.6;  // row 0 sums to 1.1
  CHECK(error_of([&] { specd::validate_tree(bad.tree(), 3, "prop"); }).find("q row 0") !=
        std::string::npos);
  bad = d;
  bad.q[3] = std::nan("");
  CHECK_THROWS_AS(specd::validate_tree(bad.tree(), 3, "prop"), specd::Error);
  bad = d;
  bad.with_q = false;
  CHECK_THROWS_AS(specd::validate_tree(bad.tree(), 3, "prop"), specd::Error);
  bad = d;
  bad.scheme = SPECD_SIBLINGS_WITHOUT_REPLACEMENT;
  bad.tokens[1] = 0;  // sibling duplicate
  CHECK(error_of([&] { specd::validate_tree(bad.tree(), 3, "prop"); }).find("same token") !=
        std::string::npos);
  // Rows of leaves may hold anything.
  bad = d;
  bad.q[9] = 5.0;
  CHECK_NOTHROW(specd::validate_tree(bad.tree(), 3, "prop"));
}

TEST_CASE("validate_target checks shape and rows") {
  specd::OwnedDraft d = small_tree();
  CHECK_NOTHROW(specd::validate_target(d.target(), d.tree(), "v"));
  auto bad = d;
  bad.p[0] = -0.1;
  CHECK_THROWS_AS(specd::validate_target(bad.target(), bad.tree(), "v"), specd::Error);
  specd_target_dists t = d.target();
  t.n_rows = 3;
  CHECK_THROWS_AS(specd::validate_target(t, d.tree(), "v"), specd::Error);
}

TEST_CASE("validate_accept_result refuses paths that are not root-to-leaf chains") {
  specd::OwnedDraft d = small_tree();
  const int32_t ok[] = {1, 3}, skip[] = {3}, wrong[] = {2, 3}, out[] = {1, 4};
  CHECK_NOTHROW(specd::validate_accept_result(ok, 2, 0, d.tree(), 3, "r"));
  CHECK_THROWS_AS(specd::validate_accept_result(skip, 1, 0, d.tree(), 3, "r"), specd::Error);
  CHECK_THROWS_AS(specd::validate_accept_result(wrong, 2, 0, d.tree(), 3, "r"), specd::Error);
  CHECK_THROWS_AS(specd::validate_accept_result(out, 2, 0, d.tree(), 3, "r"), specd::Error);
  CHECK_THROWS_AS(specd::validate_accept_result(ok, 2, 3, d.tree(), 3, "r"), specd::Error);
  const std::string msg =
      error_of([&] { specd::validate_accept_result(ok, 3, 0, d.tree(), 3, "org.x.rule"); });
  CHECK(msg.find("org.x.rule") != std::string::npos);
}

TEST_CASE("pairing checks name rule and proposer") {
  const auto rejection = specd::test::make_rule("rejection").info();
  const auto tree_rejection = specd::test::make_rule("tree-rejection").info();
  specd::DraftShape ngram{"ngram", SPECD_SIBLINGS_DETERMINISTIC, false, false};
  std::string msg = error_of([&] { specd::check_pairing(rejection, ngram); });
  CHECK(msg.find("rejection") != std::string::npos);
  CHECK(msg.find("ngram") != std::string::npos);
  CHECK(msg.find("needs the draft distributions q") != std::string::npos);
  CHECK_THROWS_AS(specd::check_pairing(rejection, ngram), specd::UsageError);

  specd::DraftShape sampled_tree{"draft-model", SPECD_SIBLINGS_IID, true, true};
  msg = error_of([&] { specd::check_pairing(rejection, sampled_tree); });
  CHECK(msg.find("chains only") != std::string::npos);
  CHECK_NOTHROW(specd::check_pairing(tree_rejection, sampled_tree));

  specd::DraftShape topk_tree{"medusa", SPECD_SIBLINGS_DETERMINISTIC, true, true};
  msg = error_of([&] { specd::check_pairing(tree_rejection, topk_tree); });
  CHECK(msg.find("deterministic") != std::string::npos);
  CHECK(msg.find("medusa") != std::string::npos);
  CHECK(msg.find("tree-rejection") != std::string::npos);
  CHECK_NOTHROW(specd::check_pairing(specd::test::make_rule("exact-match").info(), topk_tree));

  // Per round: a proposer sending a tree although it declared chains.
  specd::OwnedDraft d = small_tree();
  CHECK_THROWS_AS(specd::check_tree_pairing(rejection, d.tree(), "draft-model"), specd::Error);
  CHECK_NOTHROW(specd::check_tree_pairing(tree_rejection, d.tree(), "draft-model"));
}

TEST_CASE("lossy rules need allow_lossy") {
  const auto typical = specd::test::make_rule("typical").info();
  const std::string msg = error_of([&] { specd::check_lossy_allowed(typical, false); });
  CHECK(msg ==
        "rule 'typical' is lossy: it changes the output distribution; set [acceptance] "
        "allow_lossy = true to run it");
  CHECK_THROWS_AS(specd::check_lossy_allowed(typical, false), specd::UsageError);
  CHECK_NOTHROW(specd::check_lossy_allowed(typical, true));
  CHECK_NOTHROW(specd::check_lossy_allowed(specd::test::make_rule("rejection").info(), false));
  CHECK_NOTHROW(specd::check_lossy_allowed(specd::test::make_rule("greedy").info(), false));
}

TEST_CASE("rule parameters: unknown keys and bad values name the key and its location") {
  const specd::LoadedPlugin& typical =
      specd::test::registry().require("typical", SPECD_KIND_ACCEPTANCE);
  specd_param item{};
  item.struct_size = sizeof(specd_param);
  item.key = "epsilonn";
  item.type = SPECD_PARAM_FLOAT;
  item.float_value = 0.1;
  item.location = "run.toml:7:1";
  specd_params params{sizeof(specd_params), 1, &item, nullptr};
  try {
    specd::AcceptanceRule rule(typical, &params);
    FAIL("expected an error");
  } catch (const specd::UsageError& e) {
    CHECK(mentions(e, "epsilonn"));
    CHECK(mentions(e, "run.toml:7:1"));
    CHECK(mentions(e, "org.specd.accept.typical"));
  }
  item.key = "epsilon";
  item.float_value = 2.0;
  CHECK_THROWS_AS(specd::AcceptanceRule(typical, &params), specd::UsageError);
  item.float_value = 0.5;
  CHECK_NOTHROW(specd::AcceptanceRule(typical, &params));
  item.key = "top_k";
  item.type = SPECD_PARAM_INT;
  item.int_value = 0;
  item.float_value = 0;
  CHECK_THROWS_AS(
      specd::AcceptanceRule(specd::test::registry().require("relaxed-topk", SPECD_KIND_ACCEPTANCE),
                            &params),
      specd::UsageError);
  CHECK_THROWS_AS(specd::AcceptanceRule(
                      specd::test::registry().require("rejection", SPECD_KIND_ACCEPTANCE), &params),
                  specd::UsageError);
}

TEST_CASE("lossy rules follow their documented criteria") {
  // typical: threshold min(0.09, 0.3 * exp(-H)). p = (.6, .3, .1): H = 0.898, so the threshold
  // is min(.09, .122) = .09; token 2 (p = .1) passes, a token of p = .05 would not.
  specd::OwnedDraft d;
  d.vocab = 3;
  d.scheme = SPECD_SIBLINGS_DETERMINISTIC;
  d.with_q = false;
  d.tokens = {2};
  d.parents = {0};
  d.p = {0.6, 0.3, 0.1, 0.2, 0.5, 0.3};
  auto outs = specd::test::make_rule("typical").outcomes(d.tree(), d.target());
  for (const auto& o : outs) CHECK(o.path.size() == 1);
  // relaxed-topk: delta 0.6 in log space: p(x) >= .6 * exp(-.6) = .329; token 1 (.3) fails,
  // token 0 passes.
  d.tokens = {1};
  outs = specd::test::make_rule("relaxed-topk").outcomes(d.tree(), d.target());
  for (const auto& o : outs) CHECK(o.path.empty());
  d.tokens = {0};
  outs = specd::test::make_rule("relaxed-topk").outcomes(d.tree(), d.target());
  for (const auto& o : outs) CHECK(o.path.size() == 1);
}

TEST_CASE("cut_emitted stops at the first stop token and at the budget") {
  const std::vector<specd_token> run = {5, 7, 2, 9};
  const std::vector<specd_token> none, stop2 = {2}, stop_many = {9, 7};
  CHECK(specd::cut_emitted(run, none, 100) == 4);
  CHECK(specd::cut_emitted(run, stop2, 100) == 3);      // stop token included
  CHECK(specd::cut_emitted(run, stop_many, 100) == 2);  // the first one wins
  CHECK(specd::cut_emitted(run, none, 2) == 2);         // budget inside the run
  CHECK(specd::cut_emitted(run, stop2, 2) == 2);        // budget before the stop token
  CHECK(specd::cut_emitted(run, stop2, 0) == 0);
  CHECK(specd::cut_emitted(std::vector<specd_token>{2}, stop2, 5) == 1);
}
