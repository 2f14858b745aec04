#include "server/server_checks.hpp"

#include "common/error.hpp"
#include "common/file_io.hpp"

namespace specd::server {

std::optional<ChatFamily> configured_chat_family(const Config& config) {
  const ServerConfig& s = config.server;
  if (!s.chat_template.empty()) {
    std::optional<ChatFamily> family = chat_family_by_name(s.chat_template);
    if (!family)
      throw UsageError(config.where("server.chat_template") + ": unknown chat template '" +
                       s.chat_template + "' (known: " + chat_family_names() + ")");
    return family;
  }
  if (s.chat_template_file.empty()) return std::nullopt;
  std::string text;
  try {
    text = read_text_file(s.chat_template_file, "chat template file", size_t{1} << 20);
  } catch (const UsageError& e) {
    throw UsageError(config.where("server.chat_template_file") + ": " + e.what());
  }
  std::optional<ChatFamily> family = detect_chat_family(text);
  if (!family)
    throw UsageError(s.chat_template_file + ": the chat template matches no known family (known: " +
                     chat_family_names() + "); name one with [server] chat_template");
  return family;
}

void check_server_host(const Config& config) {
  const std::string& host = config.server.host;
  bool bad = host.empty();
  for (unsigned char c : host) bad = bad || c <= ' ' || c == 0x7f;
  if (bad)
    throw UsageError(config.where("server.host") + ": host '" + host +
                     "' is not an address or a name (empty, or holding spaces or control "
                     "characters)");
}

}  // namespace specd::server
