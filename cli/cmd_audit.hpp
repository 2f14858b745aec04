// `specd audit`: measures the lossless label of every installed acceptance rule on Markov toy
// models (see core/audit/audit_engine.hpp for the method).
#pragma once

// argv[0] is "audit". Returns 0 when every label holds, 1 when some rule's label is wrong
// (or on a runtime error), 2 on a usage error.
int run_audit_command(int argc, char** argv);
