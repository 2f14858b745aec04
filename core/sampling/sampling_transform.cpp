#include "sampling/sampling_transform.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "sampling/sampling_ranges.hpp"

namespace specd {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Indices of the surviving (finite) entries of z, most probable first, lowest id on ties.
std::vector<uint32_t> sorted_survivors(const std::vector<double>& z) {
  std::vector<uint32_t> idx;
  for (uint32_t i = 0; i < z.size(); ++i)
    if (z[i] != kNegInf) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return z[a] > z[b]; });
  return idx;
}

// Softmax over the surviving entries (log-sum-exp: shift by the max before exp).
void softmax_in_place(const std::vector<double>& z, std::span<double> out) {
  double m = kNegInf;
  for (double v : z) m = std::max(m, v);
  double total = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    out[i] = z[i] == kNegInf ? 0.0 : std::exp(z[i] - m);
    total += out[i];
  }
  // total >= 1 because the max entry contributes exp(0) = 1.
  for (double& v : out) v /= total;
}

void transform_scaled(std::vector<double> z, const SamplingParams& params, std::span<double> out) {
  std::vector<uint32_t> order = sorted_survivors(z);  // non-empty: checked by the caller
  size_t keep = order.size();
  if (params.top_k > 0) keep = std::min(keep, static_cast<size_t>(params.top_k));
  for (size_t j = keep; j < order.size(); ++j) z[order[j]] = kNegInf;
  order.resize(keep);

  if (params.top_p < 1.0 || params.min_p > 0.0) {
    std::vector<double> prob(z.size());
    softmax_in_place(z, prob);
    if (params.top_p < 1.0) {
      double mass = 0;
      size_t j = 0;
      while (j < order.size()) {
        mass += prob[order[j++]];
        if (mass >= params.top_p) break;
      }
      for (size_t r = j; r < order.size(); ++r) z[order[r]] = kNegInf;
      order.resize(j);
      softmax_in_place(z, prob);
    }
    if (params.min_p > 0.0) {
      const double floor = params.min_p * prob[order.front()];
      for (uint32_t i : order)
        if (prob[i] < floor) z[i] = kNegInf;
    }
  }
  softmax_in_place(z, out);
}

template <class T>
void transform_any(std::span<const T> logits, const SamplingParams& params, std::span<double> out) {
  if (out.size() != logits.size())
    throw Error("sampling transform: output row has " + std::to_string(out.size()) +
                " entries, logits have " + std::to_string(logits.size()));
  std::vector<double> z(logits.size());
  bool any = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double v = static_cast<double>(logits[i]);
    if (std::isnan(v) || v == std::numeric_limits<double>::infinity())
      throw Error("sampling transform: logit " + std::to_string(i) + " is " +
                  (std::isnan(v) ? "NaN" : "+inf") + " (the model produced invalid values)");
    z[i] = v;
    any = any || v != kNegInf;
  }
  if (!any)
    throw Error("sampling transform: every token of the row is masked (all logits are -inf)");
  if (params.temperature == 0.0) {
    std::fill(out.begin(), out.end(), 0.0);
    out[argmax_lowest(z)] = 1.0;
    return;
  }
  for (double& v : z)
    if (v != kNegInf) v /= params.temperature;
  transform_scaled(std::move(z), params, out);
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

uint32_t argmax_lowest(std::span<const double> row) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < row.size(); ++i)
    if (row[i] > row[best]) best = i;  // strict: the first maximum wins
  return best;
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
