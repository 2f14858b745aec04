// Plugin wrapper of TypicalRule (see typical_rule.hpp).
#include "typical/typical_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::TypicalRule, "org.specd.accept.typical", "typical", "1.0.0",
                        "Medusa typical acceptance: p(x) > min(epsilon, delta*exp(-H(p))), lossy",
                        SPECD_LABEL_LOSSY,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
