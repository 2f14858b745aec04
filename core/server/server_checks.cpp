#include "server/server_checks.hpp"

#include <arpa/inet.h>

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

namespace {

bool has_space_or_control(const std::string& text) {
  for (unsigned char c : text)
    if (c <= ' ' || c == 0x7f) return true;
  return false;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

void check_server_host(const Config& config) {
  const ServerConfig& s = config.server;
  if (s.host.empty() || has_space_or_control(s.host))
    throw UsageError(config.where("server.host") + ": host '" + s.host +
                     "' is not an address or a name (empty, or holding spaces or control "
                     "characters)");
  if (has_space_or_control(s.api_key))
    throw UsageError(config.where("server.api_key") +
                     ": the key holds spaces or control characters, which no Authorization "
                     "header carries: no request could be let in");
  if (!is_loopback_host(s.host) && s.api_key.empty() && !s.allow_public_without_key)
    throw UsageError(config.where("server.host") + ": host '" + s.host +
                     "' is not a loopback address and [server] api_key is not set: anyone who "
                     "can reach it could use it. Set api_key, or allow_public_without_key = true "
                     "in [server] to serve it without a key anyway");
}

void check_server_limits(const Config& config) {
  const ServerConfig& s = config.server;
  // Only a max_n the user wrote: the default (8) with a small queue is the user's queue.
  if (s.queue_limit > 0 && s.max_n > s.queue_limit && config.locations.count("server.max_n"))
    throw UsageError(config.where("server.max_n") + ": max_n = " + std::to_string(s.max_n) +
                     " is more than queue_limit = " + std::to_string(s.queue_limit) +
                     ": a request's choices wait in the queue together, so n above " +
                     std::to_string(s.queue_limit) +
                     " could never be let in; lower max_n or raise queue_limit");
}

}  // namespace specd::server
