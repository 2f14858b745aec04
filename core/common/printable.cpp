#include "common/printable.hpp"

#include <cstdio>

namespace specd {

std::string printable(std::string_view text, size_t max) {
  std::string out;
  for (unsigned char c : text.substr(0, max)) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return text.size() > max ? out + "..." : out;
}

}  // namespace specd
