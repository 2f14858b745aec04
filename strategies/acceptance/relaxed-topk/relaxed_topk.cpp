// Plugin wrapper of RelaxedTopkRule (see relaxed_topk_rule.hpp).
#include "relaxed-topk/relaxed_topk_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::RelaxedTopkRule, "org.specd.accept.relaxed-topk",
                        "relaxed-topk", "1.0.0",
                        "accept a draft token in p's top-k within delta (log-prob) of the top, "
                        "lossy",
                        SPECD_LABEL_LOSSY,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
