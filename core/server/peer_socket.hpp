// Finding out that an HTTP client has gone while its handler waits for the engine.
//
// cpp-httplib 0.11 (Debian's) gives a handler no socket and no "connection closed" check,
// only the request's addresses. The accepted socket is found by those addresses instead:
// the one TCP socket of this process whose local port and peer address and port are the
// request's (unique while the handler runs: the library closes it only after the handler
// returns). Linux only (/proc/self/fd).
//
// Thread rules: both functions may be called from any thread; they never block.
#pragma once

#include <string>
#include <vector>

namespace specd::server {

// An accepted connection of this process: its descriptor and its peer's numeric address.
struct ConnectionSocket {
  int fd = -1;
  std::string peer;
  int peer_port = 0;
};

// Every connection of this process accepted on `local_port` (a snapshot: a connection may
// close, and its descriptor be reused, right after).
std::vector<ConnectionSocket> connection_sockets(int local_port);

// Whether `fd` is still the connection from peer:peer_port (checked just before acting on a
// snapshot's descriptor).
bool is_connection(int fd, const std::string& peer, int peer_port);

// The descriptor of the server's connection from remote_addr:remote_port to local_port;
// -1 when no such socket is open.
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);

// True when the peer has closed the connection (end of stream, hang-up or reset), false
// while it is open or when it sent more data (a pipelined request). A client that only
// half-closes (shutdown of its write side) while still reading counts as gone.
bool peer_closed(int fd);

// Ends a connection whose request was answered without its body being read (a refusal from
// the headers): sends FIN after the answer, reads and drops what the client still sends for
// at most 1 s or 1 MiB (so that closing with unread data does not reset the connection
// before the client has read the answer, as nginx's lingering close), then shuts the reading
// side, so the library sees the end of the connection instead of taking the body for the
// next request. Blocks for at most that second.
void close_after_refusal(int fd);

}  // namespace specd::server
