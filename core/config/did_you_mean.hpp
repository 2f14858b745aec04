// Suggestions for misspelt names.
#pragma once

#include <string>
#include <vector>

namespace specd {

// The candidate closest to `word` by edit distance, if close enough to be a likely typo;
// "" otherwise.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace specd
