// The engine's checks of what plugins return (core/acceptance/tree_validation.hpp and
// result_validation.hpp) on fuzzed trees, q and p rows and accept results. Each check
// either throws specd::Error or lets the value through; what it lets through is checked
// here again, independently, against the documented contract, so a check that is too lax
// is a finding too, not only a crash.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "acceptance/result_validation.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"

namespace {

// Reads the input as a stream of bytes; zeros once it runs out.
struct Bytes {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  uint8_t next() { return at < size ? data[at++] : 0; }
};

// Values that matter for the checks: zero, exact and near-miss normalisations, non-finite.
double pick_value(Bytes& in, uint32_t vocab) {
  switch (in.next() % 10) {
    case 0:
      return 0.0;
    case 1:
      return 1.0;
    case 2:
      return 1.0 / vocab;
    case 3:
      return 0.5;
    case 4:
      return -1.0 / vocab;
    case 5:
      return std::numeric_limits<double>::quiet_NaN();
    case 6:
      return std::numeric_limits<double>::infinity();
    case 7:
      return 1.0 / vocab + 1e-9;
    case 8:
      return std::numeric_limits<double>::denorm_min();
    default:
      return 1.0 / vocab;
  }
}

// Fills a row: mostly well-formed (uniform or one-hot) so that deeper checks are reached,
// with fuzzed entries written over it.
void fill_row(Bytes& in, double* row, uint32_t vocab) {
  const uint8_t mode = in.next();
  for (uint32_t i = 0; i < vocab; ++i) row[i] = mode % 3 == 0 ? 0.0 : 1.0 / vocab;
  if (mode % 3 == 0) row[in.next() % vocab] = 1.0;
  for (uint8_t edits = in.next() % 4; edits > 0; --edits)
    row[in.next() % vocab] = pick_value(in, vocab);
}

bool row_ok(const double* row, uint32_t vocab) {
  double total = 0;
  for (uint32_t i = 0; i < vocab; ++i) {
    if (!std::isfinite(row[i]) || row[i] < 0) return false;
    total += row[i];
  }
  return std::fabs(total - 1.0) <= specd::kRowSumTolerance;
}

void expect(bool ok) {
  if (!ok) std::abort();  // a check let through what the contract forbids
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  const uint32_t vocab = 1 + in.next() % 8;
  const uint32_t n = in.next() % 12;
  const uint8_t flags = in.next();
  specd_draft_tree tree{};
  tree.struct_size = sizeof tree;
  tree.n_nodes = n;
  tree.vocab_size = flags & 1 ? vocab : vocab + (flags >> 6);
  const uint8_t scheme_byte = in.next();
  tree.scheme = scheme_byte < 250 ? 1 + scheme_byte % 3 : scheme_byte;  // rarely unknown
  std::vector<specd_token> tokens(n);
  std::vector<int32_t> parents(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Mostly in range (a chain or a bushy tree), sometimes anything a byte can say.
    const uint8_t t = in.next(), p = in.next();
    tokens[i] = t < 240 ? t % vocab : static_cast<int8_t>(t);
    parents[i] =
        p < 240 ? (i == 0 ? 0 : static_cast<int32_t>(p % (i + 1))) : static_cast<int8_t>(p);
  }
  tree.tokens = tokens.data();
  tree.parents = parents.data();
  std::vector<double> q;
  if (flags & 2) {
    q.resize(static_cast<size_t>(n + 1) * vocab);
    for (uint32_t r = 0; r <= n; ++r)
      fill_row(in, q.data() + static_cast<size_t>(r) * vocab, vocab);
    tree.q = q.data();
  }
  // Shapes used on unvalidated trees as well (the engine's stats do).
  (void)specd::tree_depth(tree);
  (void)specd::is_chain(tree);

  try {
    specd::validate_tree(tree, vocab, "fuzz");
  } catch (const specd::Error&) {
    return 0;
  }
  // The tree passed: everything acceptance.h lets a rule rely on must hold.
  if (n > 0) {
    expect(tree.vocab_size == vocab);
    expect(tree.scheme >= 1 && tree.scheme <= 3);
    const bool sampled = tree.scheme != SPECD_SIBLINGS_DETERMINISTIC;
    expect(!sampled || tree.q != nullptr);
    std::vector<bool> has_children(n + 1, false);
    for (uint32_t i = 1; i <= n; ++i) {
      expect(parents[i - 1] >= 0 && static_cast<uint32_t>(parents[i - 1]) < i);
      expect(tokens[i - 1] >= 0 && static_cast<uint32_t>(tokens[i - 1]) < vocab);
      has_children[parents[i - 1]] = true;
    }
    for (uint32_t r = 0; tree.q && r <= n; ++r)
      if (has_children[r]) expect(row_ok(tree.q + static_cast<size_t>(r) * vocab, vocab));
    for (uint32_t i = 1; sampled && i <= n; ++i) {
      expect(tree.q[static_cast<size_t>(parents[i - 1]) * vocab + tokens[i - 1]] > 0);
      for (uint32_t j = 1; tree.scheme == SPECD_SIBLINGS_WITHOUT_REPLACEMENT && j < i; ++j)
        expect(!(parents[j - 1] == parents[i - 1] && tokens[j - 1] == tokens[i - 1]));
    }
  }

  // Target rows for the tree.
  std::vector<double> p(static_cast<size_t>(n + 1) * vocab);
  for (uint32_t r = 0; r <= n; ++r) fill_row(in, p.data() + static_cast<size_t>(r) * vocab, vocab);
  specd_target_dists target{sizeof target, n + 1, vocab, p.data()};
  if (in.next() == 255) target.n_rows = n + 2;  // a verifier miscounting its rows
  bool target_ok = true;
  try {
    specd::validate_target(target, tree, "fuzz");
  } catch (const specd::Error&) {
    target_ok = false;
  }
  if (target_ok) {
    expect(target.n_rows == n + 1);
    for (uint32_t r = 0; r <= n; ++r)
      expect(row_ok(p.data() + static_cast<size_t>(r) * vocab, vocab));
  }

  // An accept result: mostly a real root-to-node walk, sometimes anything.
  const uint32_t depth = specd::tree_depth(tree);
  const uint32_t length = in.next() % (depth + 2);
  std::vector<int32_t> path(length);
  int32_t previous = 0;
  for (uint32_t i = 0; i < length; ++i) {
    const uint8_t b = in.next();
    int32_t node = static_cast<int8_t>(b);
    if (b < 200) {
      // A child of `previous`, if it has one.
      for (uint32_t c = 1; c <= n; ++c)
        if (parents[c - 1] == previous && (b % 2 == 0 || node <= 0)) {
          node = static_cast<int32_t>(c);
          if (b % 3 == 0) break;
        }
    }
    path[i] = node;
    previous = node;
  }
  const uint8_t nb = in.next();
  const specd_token next = nb < 240 ? nb % vocab : static_cast<int8_t>(nb) * 37;
  try {
    specd::validate_accept_result(path.data(), length, next, tree, vocab, "fuzz");
  } catch (const specd::Error&) {
    return 0;
  }
  expect(length <= depth);
  expect(next >= 0 && static_cast<uint32_t>(next) < vocab);
  previous = 0;
  for (uint32_t i = 0; i < length; ++i) {
    expect(path[i] >= 1 && static_cast<uint32_t>(path[i]) <= n);
    expect(parents[path[i] - 1] == previous);
    previous = path[i];
  }
  return 0;
}
