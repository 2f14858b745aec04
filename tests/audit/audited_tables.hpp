// The built-in tables for a test's whole-table audit. Under the sanitizers (the same suite,
// about ten times slower) only the edge cases that take the rules' rarer paths (q = 0, p = 0,
// a vocabulary of the draft's own): the memory checks need every path, and the plain build
// checks every table's statistics. SPECD_SANITIZED comes from the build (0 or 1).
#pragma once

#include <vector>

#include "audit/markov_model.hpp"

inline std::vector<specd::MarkovModel> audited_tables() {
  auto tables = specd::builtin_markov_models();
  if (SPECD_SANITIZED)
    std::erase_if(tables, [](const specd::MarkovModel& t) {
      return t.name != "q-zero" && t.name != "p-zero" && t.name != "two-vocabularies";
    });
  return tables;
}
