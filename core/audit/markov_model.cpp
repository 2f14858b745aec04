#include "audit/markov_model.hpp"

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "config/toml_text.hpp"

namespace specd {
namespace {

std::string at(const std::string& path, const toml::source_region& region) {
  return path + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column) + ": ";
}

std::vector<double> read_row(const toml::node& node, const std::string& path,
                             const std::string& what, uint32_t vocab) {
  const toml::array* arr = node.as_array();
  if (!arr) throw UsageError(at(path, node.source()) + what + " must be an array of numbers");
  if (arr->size() != vocab)
    throw UsageError(at(path, node.source()) + what + " has " + std::to_string(arr->size()) +
                     " entries, vocab is " + std::to_string(vocab));
  std::vector<double> row;
  for (const toml::node& v : *arr) {
    std::optional<double> x = v.value<double>();
    if (!x || !std::isfinite(*x) || *x < 0)
      throw UsageError(at(path, v.source()) + what + " entries must be finite numbers >= 0");
    row.push_back(*x);
  }
  double total = 0;
  for (double x : row) total += x;
  if (std::fabs(total - 1.0) > 1e-6)
    throw UsageError(at(path, node.source()) + what + " sums to " + std::to_string(total) +
                     " (must be 1 within 1e-6)");
  return row;
}

std::vector<std::vector<double>> read_matrix(const toml::table& t, const char* key,
                                             const std::string& path, uint32_t vocab) {
  const toml::node* node = t.get(key);
  if (!node)
    throw UsageError(path + ": missing key '" + key + "' (a " + std::to_string(vocab) + " x " +
                     std::to_string(vocab) + " array of rows)");
  const toml::array* arr = node->as_array();
  if (!arr || arr->size() != vocab)
    throw UsageError(at(path, node->source()) + "'" + key + "' must be an array of " +
                     std::to_string(vocab) + " rows");
  std::vector<std::vector<double>> rows;
  for (size_t a = 0; a < vocab; ++a)
    rows.push_back(
        read_row((*arr)[a], path, std::string(key) + " row " + std::to_string(a), vocab));
  return rows;
}

// An optional array of strings (empty when the key is absent).
std::vector<std::string> read_texts(const toml::table& t, const char* key,
                                    const std::string& path) {
  std::vector<std::string> out;
  const toml::node* node = t.get(key);
  if (!node) return out;
  const toml::array* arr = node->as_array();
  if (!arr || arr->size() > 64)
    throw UsageError(at(path, node->source()) + "'" + key +
                     "' must be an array of at most 64 strings");
  for (const toml::node& v : *arr) {
    std::optional<std::string> s = v.value<std::string>();
    if (!s) throw UsageError(at(path, v.source()) + "'" + key + "' entries must be strings");
    out.push_back(*s);
  }
  return out;
}

std::vector<double> normalised(std::vector<double> r) {
  double s = 0;
  for (double v : r) s += v;
  for (double& v : r) v /= s;
  return r;
}

MarkovModel make(std::string name, std::string description, std::vector<double> initial,
                 std::vector<std::vector<double>> target, std::vector<std::vector<double>> draft) {
  MarkovModel m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.vocab = static_cast<uint32_t>(initial.size());
  m.initial = normalised(std::move(initial));
  for (auto& r : target) m.target.push_back(normalised(std::move(r)));
  for (auto& r : draft) m.draft.push_back(normalised(std::move(r)));
  return m;
}

// Row `base` rotated right by `shift` positions.
std::vector<double> rotated(const std::vector<double>& base, size_t shift) {
  std::vector<double> r(base.size());
  for (size_t i = 0; i < base.size(); ++i) r[(i + shift) % base.size()] = base[i];
  return r;
}

std::vector<std::vector<double>> circulant(const std::vector<double>& base) {
  std::vector<std::vector<double>> m;
  for (size_t a = 0; a < base.size(); ++a) m.push_back(rotated(base, a));
  return m;
}

}  // namespace

void validate_markov_model(const MarkovModel& m, const std::string& where) {
  const std::string p = where.empty() ? "" : where + ": ";
  if (m.vocab < 2 || m.vocab > 64)
    throw UsageError(p + "vocab must be in [2, 64] (got " + std::to_string(m.vocab) + ")");
  auto row_ok = [&](const std::vector<double>& r, const std::string& what) {
    if (r.size() != m.vocab)
      throw UsageError(p + what + " has " + std::to_string(r.size()) + " entries, vocab is " +
                       std::to_string(m.vocab));
    double s = 0;
    for (double v : r) {
      if (!std::isfinite(v) || v < 0) throw UsageError(p + what + " has an invalid entry");
      s += v;
    }
    if (std::fabs(s - 1.0) > 1e-6) throw UsageError(p + what + " does not sum to 1");
  };
  row_ok(m.initial, "initial");
  const uint32_t dv = m.draft_vocab();
  if (m.target.size() != m.vocab || m.draft.size() != dv)
    throw UsageError(p + "target must have vocab rows and draft one per draft token");
  for (uint32_t a = 0; a < m.vocab; ++a) row_ok(m.target[a], "target row " + std::to_string(a));
  for (uint32_t a = 0; a < dv; ++a) {
    if (m.draft[a].size() != dv)
      throw UsageError(p + "draft row " + std::to_string(a) + " has " +
                       std::to_string(m.draft[a].size()) + " entries, the draft has " +
                       std::to_string(dv) + " tokens");
    double s = 0;
    for (double v : m.draft[a]) {
      if (!std::isfinite(v) || v < 0)
        throw UsageError(p + "draft row " + std::to_string(a) + " has an invalid entry");
      s += v;
    }
    if (std::fabs(s - 1.0) > 1e-6)
      throw UsageError(p + "draft row " + std::to_string(a) + " does not sum to 1");
  }
  if (!m.two_vocabularies()) {
    if (!m.target_text.empty()) throw UsageError(p + "target_text needs draft_text");
    return;
  }
  if (dv < 2 || dv > 64)
    throw UsageError(p + "draft_text must have 2 to 64 tokens (got " + std::to_string(dv) + ")");
  if (m.target_text.size() != m.vocab)
    throw UsageError(p + "target_text must have vocab (" + std::to_string(m.vocab) + ") entries");
  // Both tokenizers must spell any text of either vocabulary.
  for (const auto* texts : {&m.target_text, &m.draft_text})
    for (const std::string& t : *texts) {
      if (t.empty()) throw UsageError(p + "token texts must not be empty");
      for (char c : t)
        for (const auto* other : {&m.target_text, &m.draft_text})
          if (std::find(other->begin(), other->end(), std::string(1, c)) == other->end())
            throw UsageError(p + "'" + std::string(1, c) + "' (in '" + t +
                             "') must be a token of both vocabularies");
    }
}

MarkovModel load_markov_model(const std::string& path) {
  const toml::table t = parse_toml_file(path, "Markov table");
  MarkovModel m;
  m.name = t["name"].value_or(std::string());
  if (m.name.empty()) {
    const size_t slash = path.find_last_of('/');
    m.name = slash == std::string::npos ? path : path.substr(slash + 1);
  }
  for (const auto& [key, value] : t) {
    const std::string k(key.str());
    if (k != "name" && k != "vocab" && k != "initial" && k != "target" && k != "draft" &&
        k != "description" && k != "target_text" && k != "draft_text")
      throw UsageError(at(path, value.source()) + "unknown key '" + k +
                       "' (known: vocab, initial, target, draft, name, description, "
                       "target_text, draft_text)");
  }
  m.description = t["description"].value_or(std::string());
  const toml::node* vocab = t.get("vocab");
  if (!vocab) throw UsageError(path + ": missing key 'vocab' (the number of tokens)");
  std::optional<int64_t> v = vocab->value<int64_t>();
  if (!v || *v < 2 || *v > 64)
    throw UsageError(at(path, vocab->source()) + "vocab must be an integer in [2, 64]");
  m.vocab = static_cast<uint32_t>(*v);
  const toml::node* initial = t.get("initial");
  if (!initial) throw UsageError(path + ": missing key 'initial' (the first token's distribution)");
  m.initial = read_row(*initial, path, "initial", m.vocab);
  m.target = read_matrix(t, "target", path, m.vocab);
  m.target_text = read_texts(t, "target_text", path);
  m.draft_text = read_texts(t, "draft_text", path);
  m.draft = read_matrix(t, "draft", path, m.draft_vocab());
  validate_markov_model(m, path);
  return m;
}

std::vector<MarkovModel> builtin_markov_models() {
  std::vector<MarkovModel> out;
  const std::vector<double> uniform4 = {1, 1, 1, 1};
  out.push_back(make("peaked", "peaked target, draft peaked elsewhere", uniform4,
                     circulant({0.7, 0.15, 0.1, 0.05}), circulant({0.4, 0.1, 0.4, 0.1})));
  out.push_back(make("near-uniform", "target close to uniform, uniform draft", {1, 2, 3, 4},
                     circulant({0.27, 0.25, 0.24, 0.24}), circulant({1, 1, 1, 1})));
  out.push_back(make("q-zero", "draft has q(x) = 0 where the target has p(x) > 0", uniform4,
                     circulant({0.4, 0.3, 0.2, 0.1}), circulant({0.6, 0.4, 0, 0})));
  out.push_back(make("p-zero", "target has p(x) = 0 where the draft has q(x) > 0", uniform4,
                     circulant({0.5, 0.5, 0, 0}), circulant({0.25, 0.25, 0.25, 0.25})));
  out.push_back(make("p-equals-q", "draft identical to target (residual never sampled)",
                     {3, 1, 1, 1}, circulant({0.5, 0.2, 0.2, 0.1}),
                     circulant({0.5, 0.2, 0.2, 0.1})));
  out.push_back(make("one-hot-p", "deterministic target", uniform4, circulant({0, 1, 0, 0}),
                     circulant({0.3, 0.3, 0.2, 0.2})));
  out.push_back(make("one-hot-q", "deterministic draft (one-hot rows)", uniform4,
                     circulant({0.3, 0.4, 0.2, 0.1}), circulant({0, 1, 0, 0})));
  // The draft has "ca" and "abc", which the target lacks, lacks the target's "bc", and spells
  // "a" twice (the second one only ever drafted, never read).
  MarkovModel two = make("two-vocabularies", "draft with a vocabulary of its own", {2, 1, 1, 1, 1},
                         {{0.1, 0.3, 0.1, 0.3, 0.2},
                          {0.2, 0.1, 0.4, 0.1, 0.2},
                          {0.4, 0.2, 0.1, 0.2, 0.1},
                          {0.1, 0.1, 0.5, 0.1, 0.2},
                          {0.5, 0.1, 0.1, 0.2, 0.1}},
                         {{0.1, 0.3, 0.1, 0.2, 0.1, 0.1, 0.1},
                          {0.2, 0.1, 0.3, 0.1, 0.1, 0.1, 0.1},
                          {0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1},
                          {0.1, 0.1, 0.4, 0.1, 0.1, 0.1, 0.1},
                          {0.1, 0.3, 0.1, 0.2, 0.1, 0.1, 0.1},
                          {0.3, 0.1, 0.1, 0.1, 0.2, 0.1, 0.1},
                          {0.1, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1}});
  two.target_text = {"a", "b", "c", "ab", "bc"};
  two.draft_text = {"a", "b", "c", "ab", "ca", "abc", "a"};
  out.push_back(std::move(two));
  return out;
}

}  // namespace specd
