// Names of the acceptance ABI's enums, for messages, tables and JSON.
#pragma once

#include <cstdint>
#include <string>

#include "specd/acceptance.h"
#include "specd/draft.h"

namespace specd {

// "exact", "greedy-exact", "lossy" (or "unknown(<n>)").
std::string label_name(specd_lossless_label label);

// "deterministic", "iid", "without-replacement" (or "unknown(<n>)").
std::string scheme_name(specd_sibling_scheme scheme);

// Comma-separated names of the schemes a rule's flags declare, e.g. "iid, without-replacement".
std::string supported_schemes(uint64_t flags);

}  // namespace specd
