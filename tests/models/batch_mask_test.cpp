#include <doctest/doctest.h>

#include "common/error.hpp"
#include "models/batch_mask.hpp"

using namespace specd;

TEST_CASE("batch mask: a chain folds into prefix lengths, a tree lists ancestors") {
  const std::vector<int32_t> chain = {-1, 0, 1};
  BatchMask c = build_batch_mask(10, chain);
  CHECK(c.prefix_len == std::vector<int32_t>{11, 12, 13});
  CHECK(c.extra_slots.empty());
  CHECK(c.depth == std::vector<int32_t>{0, 1, 2});

  const std::vector<int32_t> tree = {-1, 0, 0, 2, -1};
  BatchMask t = build_batch_mask(5, tree);
  CHECK(t.prefix_len == std::vector<int32_t>{6, 7, 6, 6, 5});
  CHECK(t.extra_begin == std::vector<int32_t>{0, 0, 0, 1, 3, 4});
  CHECK(t.extra_slots == std::vector<int32_t>{7, 7, 8, 9});
  CHECK(t.depth == std::vector<int32_t>{0, 1, 1, 2, 0});

  CHECK_THROWS_AS(build_batch_mask(0, std::vector<int32_t>{0}), Error);
  CHECK_THROWS_AS(build_batch_mask(0, std::vector<int32_t>{-1, 3}), Error);
}
