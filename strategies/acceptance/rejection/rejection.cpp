// Plugin wrapper of RejectionRule (see rejection_rule.hpp).
#include "rejection/rejection_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::RejectionRule, "org.specd.accept.rejection", "rejection",
                        "1.0.0",
                        "speculative sampling with rejection (Leviathan/Chen), chains, exact",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_NEEDS_Q | SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID))
