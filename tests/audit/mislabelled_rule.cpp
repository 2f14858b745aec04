// Test-only plugin: Medusa's typical acceptance (lossy) that claims to be exact. `specd audit`
// must call its label wrong from the exact outcomes.
#include "specd/cpp/plugin.hpp"
#include "typical/typical_rule.hpp"

SPECD_ACCEPTANCE_PLUGIN(specd::accept::TypicalRule, "org.specd.test.mislabelled",
                        "test-mislabelled", "0.0.1", "typical acceptance wrongly labelled exact",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC))
