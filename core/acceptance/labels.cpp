#include "acceptance/labels.hpp"

namespace specd {

std::string label_name(specd_lossless_label label) {
  switch (label) {
    case SPECD_LABEL_EXACT:
      return "exact";
    case SPECD_LABEL_GREEDY_EXACT:
      return "greedy-exact";
    case SPECD_LABEL_LOSSY:
      return "lossy";
    default:
      return "unknown(" + std::to_string(label) + ")";
  }
}

std::string scheme_name(specd_sibling_scheme scheme) {
  const char* name = specd_sibling_scheme_name(scheme);
  return name ? name : "unknown(" + std::to_string(scheme) + ")";
}

std::string supported_schemes(uint64_t flags) {
  std::string out;
  for (specd_sibling_scheme s :
       {SPECD_SIBLINGS_DETERMINISTIC, SPECD_SIBLINGS_IID, SPECD_SIBLINGS_WITHOUT_REPLACEMENT})
    if (flags & SPECD_ACCEPT_SCHEME_BIT(s)) out += (out.empty() ? "" : ", ") + scheme_name(s);
  return out.empty() ? "none" : out;
}

}  // namespace specd
