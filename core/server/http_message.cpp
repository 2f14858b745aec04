#include "server/http_message.hpp"

#include <strings.h>

namespace specd::server {

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key.size() == name.size() && strncasecmp(key.data(), name.data(), name.size()) == 0)
      return value;
  return "";
}

}  // namespace specd::server
