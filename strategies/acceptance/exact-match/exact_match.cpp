// Plugin wrapper of ExactMatchRule (see exact_match_rule.hpp).
#include "exact-match/exact_match_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::ExactMatchRule, "org.specd.accept.exact-match",
                        "exact-match", "1.0.0",
                        "sample from p at each node and follow the matching child, exact",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
