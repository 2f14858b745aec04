// TOML config loader: any text (and any --set overrides) either gives a Config or throws
// specd::UsageError (config.hpp). Input layout: the TOML text, then optionally a NUL byte
// followed by override lines separated by newlines.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view text = input.substr(0, input.find('\0'));
  std::vector<std::string> overrides;
  if (text.size() < input.size()) {
    std::string_view rest = input.substr(text.size() + 1);
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      overrides.emplace_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
  }
  try {
    specd::Config config = specd::parse_config(std::string(text), "fuzz.toml", overrides);
    (void)config.where("proposer.kind");
    (void)config.where("sampling.temperature");
  } catch (const specd::UsageError&) {
  }
  return 0;
}
