// Plugin wrapper of TreeRejectionRule (see tree_rejection_rule.hpp).
#include "tree-rejection/tree_rejection_rule.hpp"

#include "specd/cpp/plugin.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::TreeRejectionRule, "org.specd.accept.tree-rejection",
                        "tree-rejection", "1.0.0",
                        "recursive rejection sampling over draft trees (SpecInfer), exact",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_NEEDS_Q | SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
