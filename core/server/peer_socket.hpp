// Finding out that an HTTP client has gone while its handler waits for the engine: the
// listener reads nothing from a connection while its handler runs, so the socket itself is
// asked.
//
// Thread rules: may be called from any thread; never blocks.
#pragma once

namespace specd::server {

// True when the peer has closed the connection (end of stream, hang-up or reset), false
// while it is open, when it sent more data (a pipelined request), or for fd < 0. A client
// that only half-closes (shutdown of its write side) while still reading counts as gone.
bool peer_closed(int fd);

}  // namespace specd::server
