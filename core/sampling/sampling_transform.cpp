#include "sampling/sampling_transform.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "sampling/sampling_ranges.hpp"

namespace specd {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The ranking every filter uses: larger z first, the lower id first on ties (a total order,
// so any selection by it picks exactly the entries a full stable sort would put first).
struct Ranked {
  const std::vector<double>& z;
  bool operator()(uint32_t a, uint32_t b) const { return z[a] != z[b] ? z[a] > z[b] : a < b; }
};

// A row's working storage, kept per thread between calls: rows of a large vocabulary are
// megabytes, which freshly allocated would cost their page faults and zeroing every time.
struct Scratch {
  std::vector<double> z, e, prob;
  std::vector<uint32_t> order;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Indices of the surviving (finite) entries of z, into idx.
void survivors(const std::vector<double>& z, std::vector<uint32_t>& idx) {
  idx.clear();
  for (uint32_t i = 0; i < z.size(); ++i)
    if (z[i] != kNegInf) idx.push_back(i);
}

// Puts the `count` best of `idx` (Ranked) first, in rank order; the rest stay after them in
// no particular order. Selection, then a sort of the selected only: a large vocabulary is
// never sorted whole.
void rank_first(std::vector<uint32_t>& idx, size_t count, const std::vector<double>& z) {
  count = std::min(count, idx.size());
  const Ranked ranked{z};
  if (count < idx.size()) std::nth_element(idx.begin(), idx.begin() + count, idx.end(), ranked);
  std::sort(idx.begin(), idx.begin() + count, ranked);
}

// exp(z - max) of every surviving entry (0 for the masked ones), computed once: each softmax
// below (after a filter removes entries, never the largest) divides the same terms by the sum
// of those still kept, summed in index order, so the bits are those of a fresh log-sum-exp
// softmax over the survivors.
struct Exps {
  std::vector<double>& e;
  Exps(const std::vector<double>& z, std::vector<double>& storage) : e(storage) {
    e.resize(z.size());
    double m = kNegInf;
    for (double v : z) m = std::max(m, v);
    for (size_t i = 0; i < z.size(); ++i) e[i] = z[i] == kNegInf ? 0.0 : std::exp(z[i] - m);
  }
  // The softmax of the entries of z still finite, into out.
  void softmax(const std::vector<double>& z, std::span<double> out) const {
    double total = 0;
    for (size_t i = 0; i < z.size(); ++i) total += out[i] = z[i] == kNegInf ? 0.0 : e[i];
    // total >= 1 because the max entry contributes exp(0) = 1.
    for (double& v : out) v /= total;
  }
};

void transform_scaled(std::vector<double>& z, const SamplingParams& params, std::span<double> out) {
  Scratch& scratch_ = scratch();
  const Exps exps(z, scratch_.e);
  const bool filters = params.top_k > 0 || params.top_p < 1.0 || params.min_p > 0.0;
  if (!filters) return exps.softmax(z, out);
  std::vector<uint32_t>& order = scratch_.order;
  survivors(z, order);  // non-empty: checked by the caller
  size_t ranked = 0;    // order[0 .. ranked) is in rank order
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < order.size()) {
    const size_t keep = static_cast<size_t>(params.top_k);
    rank_first(order, keep, z);
    ranked = keep;
    for (size_t j = keep; j < order.size(); ++j) z[order[j]] = kNegInf;
    order.resize(keep);
  }

  if (params.top_p < 1.0 || params.min_p > 0.0) {
    std::vector<double>& prob = scratch_.prob;
    prob.resize(z.size());
    exps.softmax(z, prob);
    if (params.top_p < 1.0) {
      // The most probable tokens in rank order until their mass reaches top_p: rank a few
      // hundred first, and more only when those fall short.
      double mass = 0;
      size_t j = 0;
      for (size_t want = std::min<size_t>(order.size(), 256);;
           want = std::min(order.size(), 4 * want)) {
        if (ranked < want) {
          rank_first(order, want, z);  // keeps the ranked prefix: it holds the best of all
          ranked = want;
        }
        bool reached = false;
        while (j < want) {
          mass += prob[order[j++]];
          if (mass >= params.top_p) {
            reached = true;
            break;
          }
        }
        if (reached || want == order.size()) break;
      }
      for (size_t r = j; r < order.size(); ++r) z[order[r]] = kNegInf;
      order.resize(j);
      exps.softmax(z, prob);
    }
    if (params.min_p > 0.0) {
      double top = 0;
      for (uint32_t i : order) top = std::max(top, prob[i]);
      const double floor = params.min_p * top;
      for (uint32_t i : order)
        if (prob[i] < floor) z[i] = kNegInf;
    }
  }
  exps.softmax(z, out);
}

// A logit that no transform accepts, named.
template <class T>
[[noreturn]] void bad_logit(size_t i, T v) {
  throw Error("sampling transform: logit " + std::to_string(i) + " is " +
              (std::isnan(v) ? "NaN" : "+inf") + " (the model produced invalid values)");
}

// 16-byte vectors of T (GCC's vector extension; SSE2 on every x86-64).
template <class T>
struct Lanes;
template <>
struct Lanes<float> {
  using V = float __attribute__((vector_size(16)));
};
template <>
struct Lanes<double> {
  using V = double __attribute__((vector_size(16)));
};

// The largest of p[b, e) and whether any is NaN, in vectors (the compiler does not vectorise
// a max whose NaN behaviour it must keep: 7x faster over 152k logits). A NaN never becomes
// the maximum (the comparison is false); a block holding one is refused anyway.
template <class T>
T block_max(const T* p, size_t b, size_t e, bool& nan) {
  using V = typename Lanes<T>::V;
  constexpr size_t kLanes = sizeof(V) / sizeof(T);
  constexpr T kInf = std::numeric_limits<T>::infinity();
  V m, v;
  for (size_t j = 0; j < kLanes; ++j) m[j] = -kInf;
  auto unordered = m != m;  // all false: the lanes' NaN flags
  size_t i = b;
  for (; i + kLanes <= e; i += kLanes) {
    std::memcpy(&v, p + i, sizeof v);
    m = m < v ? v : m;
    unordered |= v != v;
  }
  T top = -kInf;
  for (size_t j = 0; j < kLanes; ++j) {
    top = top < m[j] ? m[j] : top;
    nan = nan || unordered[j] != 0;
  }
  for (; i < e; ++i) {
    top = top < p[i] ? p[i] : top;
    nan = nan || p[i] != p[i];
  }
  return top;
}

// Temperature 0: the first maximum, found in the one pass that checks the row (a greedy
// row over a 152k vocabulary is read once, not copied and read again): block by block, each
// block's maximum and whether it holds a NaN or +inf, then, only for a block that beats the
// best so far, the first index of its maximum.
template <class T>
void one_hot_of_max(std::span<const T> logits, std::span<double> out) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  constexpr size_t kBlock = 256;
  const size_t n = logits.size();
  size_t best = 0;
  T top = -kInf;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    bool nan = false;
    const T m = block_max(logits.data(), b, e, nan);
    if (nan || m == kInf)
      for (size_t i = b; i < e; ++i)
        if (std::isnan(logits[i]) || logits[i] == kInf) bad_logit(i, logits[i]);
    if (m > top) {  // strict: an earlier block's equal maximum wins
      top = m;
      best = b;
      while (logits[best] != m) ++best;  // the block's first maximum
    }
  }
  if (top == -kInf)
    throw Error("sampling transform: every token of the row is masked (all logits are -inf)");
  std::fill(out.begin(), out.end(), 0.0);
  out[best] = 1.0;
}

template <class T>
void transform_any(std::span<const T> logits, const SamplingParams& params, std::span<double> out) {
  if (out.size() != logits.size())
    throw Error("sampling transform: output row has " + std::to_string(out.size()) +
                " entries, logits have " + std::to_string(logits.size()));
  if (params.temperature == 0.0) return one_hot_of_max(logits, out);
  std::vector<double>& z = scratch().z;
  z.resize(logits.size());
  bool any = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double v = static_cast<double>(logits[i]);
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) bad_logit(i, v);
    z[i] = v;
    any = any || v != kNegInf;
  }
  if (!any)
    throw Error("sampling transform: every token of the row is masked (all logits are -inf)");
  for (double& v : z)
    if (v != kNegInf) v /= params.temperature;
  transform_scaled(z, params, out);
}

}  // namespace

void validate_sampling_params(const SamplingParams& params) {
  auto check = [](const char* name, const std::string& range, const std::string& value) {
    if (!range.empty())
      throw UsageError(std::string(name) + " = " + value + " is out of range (" + range + ")");
  };
  auto text = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  check("temperature", temperature_range(params.temperature), text(params.temperature));
  check("top_k", top_k_range(params.top_k), std::to_string(params.top_k));
  check("top_p", top_p_range(params.top_p), text(params.top_p));
  check("min_p", min_p_range(params.min_p), text(params.min_p));
}

void transform_logits(std::span<const float> logits, const SamplingParams& params,
                      std::span<double> out) {
  transform_any(logits, params, out);
}

void transform_logits(std::span<const double> logits, const SamplingParams& params,
                      std::span<double> out) {
  transform_any(logits, params, out);
}

std::vector<double> transform_logits(std::span<const double> logits, const SamplingParams& params) {
  std::vector<double> out(logits.size());
  transform_any(logits, params, std::span<double>(out));
  return out;
}

std::vector<double> transform_probs(std::span<const double> probs, const SamplingParams& params) {
  std::vector<double> logits(probs.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] >= 0.0) || !std::isfinite(probs[i]))
      throw Error("sampling transform: probability " + std::to_string(i) +
                  " is not a finite "
                  "number >= 0");
    logits[i] = probs[i] > 0 ? std::log(probs[i]) : kNegInf;
  }
  return transform_logits(logits, params);
}

}  // namespace specd
