// Plugin wrapper of GreedyRule (see greedy_rule.hpp).
#include "greedy/greedy_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::GreedyRule, "org.specd.accept.greedy", "greedy", "1.0.0",
                        "follow the child equal to argmax p; lossless at temperature 0 only",
                        SPECD_LABEL_GREEDY_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
