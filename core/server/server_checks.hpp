// The [server] section's checks that need more than the configuration's own types: the chat
// template a name or a file gives, and the host's spelling. `specd serve` runs them before
// it listens and `specd check-config` runs them too, so a configuration it calls ok does not
// fail to serve for these reasons.
#pragma once

#include <optional>
#include <string>

#include "config/config.hpp"
#include "server/chat_template.hpp"

namespace specd::server {

// The family [server] chat_template names, or the one the [server] chat_template_file holds
// (read at most 1 MiB: a FIFO, device or directory is refused, naming the file); nullopt
// when neither is set (the target's own template then decides). Throws UsageError naming
// the key's position.
std::optional<ChatFamily> configured_chat_family(const Config& config);

// Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost).
bool is_loopback_host(const std::string& host);

// Refuses, with UsageError naming the key's position: a [server] host that is empty or holds
// spaces or control characters (a name or an address is never spelled so; the resolver's
// error would not say why); an api_key holding them (no Authorization header carries it, so
// no request could be let in); a host that is not loopback without api_key, unless
// allow_public_without_key says to serve it open.
void check_server_host(const Config& config);

// Refuses limits that leave requests the server accepts but can never run: a max_n written
// above queue_limit (a request's n choices wait in the queue together, so n past it would be
// refused every time).
void check_server_limits(const Config& config);

}  // namespace specd::server
