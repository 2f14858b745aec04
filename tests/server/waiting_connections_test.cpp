// Connections waiting for a request, capped per client address (server/waiting_connections.hpp):
// the oldest of an address go first, other addresses are untouched, and a connection whose
// request arrived no longer counts.
#include <doctest/doctest.h>

#include "server/waiting_connections.hpp"

using specd::server::WaitingConnections;

TEST_CASE("beyond the cap an address loses its longest-waiting connections") {
  WaitingConnections waiting(3);
  for (uint64_t id = 1; id <= 3; ++id) CHECK(waiting.waiting("10.0.0.1", id).empty());
  CHECK(waiting.waiting("10.0.0.2", 9).empty());  // another address has its own cap
  CHECK(waiting.waiting("10.0.0.1", 4) == std::vector<uint64_t>{1});
  // Connection 2's request arrived: it is not waiting, so 5 pushes out 3, not 2.
  waiting.done(2);
  CHECK(waiting.waiting("10.0.0.1", 5).empty());
  CHECK(waiting.waiting("10.0.0.1", 6) == std::vector<uint64_t>{3});
  // Answered, 2 waits again, now the newest: 4 goes.
  CHECK(waiting.waiting("10.0.0.1", 2) == std::vector<uint64_t>{4});
  CHECK(waiting.count("10.0.0.1") == 3);
  CHECK(waiting.count("10.0.0.2") == 1);
  CHECK(waiting.cut_total() == 3);
  // Closed connections leave; unknown ids are ignored.
  for (uint64_t id : {2, 5, 6, 9, 77}) waiting.done(id);
  CHECK(waiting.count("10.0.0.1") == 0);
  CHECK(waiting.count("10.0.0.2") == 0);
}

TEST_CASE("waiting again moves a connection to the back; 0 means no cap") {
  WaitingConnections capped(2);
  capped.waiting("a", 1);
  capped.waiting("a", 2);
  CHECK(capped.waiting("a", 1).empty());  // already waiting: moved, not added
  CHECK(capped.waiting("a", 3) == std::vector<uint64_t>{2});
  WaitingConnections open(0);
  for (uint64_t id = 0; id < 1000; ++id) CHECK(open.waiting("a", id).empty());
  CHECK(open.count("a") == 1000);
  CHECK(open.cut_total() == 0);
}
