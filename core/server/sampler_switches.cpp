#include "server/sampler_switches.hpp"

#include <map>
#include <string>
#include <vector>

#include "server/request_fields.hpp"

namespace specd::server {
namespace {

using nlohmann::json;

// A switch's off value; `or_below`: every value up to it is off too.
struct Off {
  json value;
  bool or_below = false;
};

const std::map<std::string, Off> kSwitches = {{"mirostat", {0}},
                                              {"typical_p", {1.0}},
                                              {"dynatemp_range", {0.0}},
                                              {"dry_multiplier", {0.0}},
                                              {"xtc_probability", {0.0}},
                                              {"top_n_sigma", {0.0, true}},
                                              {"tfs_z", {1.0}},
                                              {"penalize_nl", {false}},
                                              {"n_probs", {0}},
                                              {"min_keep", {0}},
                                              {"n_indent", {0}},
                                              {"t_max_predict_ms", {0, true}},
                                              {"timings_per_token", {false}},
                                              {"return_progress", {false}}};

// Settings that act only through a switch.
const std::map<std::string, std::string> kSwitchOf = {{"mirostat_tau", "mirostat"},
                                                      {"mirostat_eta", "mirostat"},
                                                      {"dynatemp_exponent", "dynatemp_range"},
                                                      {"dry_base", "dry_multiplier"},
                                                      {"dry_allowed_length", "dry_multiplier"},
                                                      {"dry_penalty_last_n", "dry_multiplier"},
                                                      {"dry_sequence_breakers", "dry_multiplier"},
                                                      {"xtc_threshold", "xtc_probability"},
                                                      {"post_sampling_probs", "n_probs"}};

bool is_off(const json& value, const Off& off) {
  if (value.is_null()) return true;
  if (off.value.is_boolean()) return value == off.value;
  if (!value.is_number()) return false;
  const double v = value.get<double>(), o = off.value.get<double>();
  return off.or_below ? v <= o : v == o;
}

}  // namespace

void drop_switches_left_off(json& body) {
  std::vector<std::string> drop;
  for (const auto& [key, value] : body.items()) {
    if (auto off = kSwitches.find(key); off != kSwitches.end()) {
      if (!is_off(value, off->second))
        bad(key,
            "asks for what specd does not do; only " + off->second.value.dump() +
                (off->second.or_below ? " or less" : "") + " (off) is accepted" +
                (key == "n_probs" ? " (per-token logprobs: the OpenAI routes' logprobs)" : ""));
      drop.push_back(key);
    } else if (kSwitchOf.count(key)) {
      drop.push_back(key);  // its switch, if the body has it, is checked above
    }
  }
  for (const std::string& key : drop) body.erase(key);
}

}  // namespace specd::server
