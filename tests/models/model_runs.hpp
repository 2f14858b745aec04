// What the model suites share to run a model: one CPU device, random token ids, and the
// PyTorch reference forward to compare with.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../backend/backend_test_util.hpp"
#include "engine_config.hpp"
#include "test_paths.hpp"

namespace specd::test {

// The CPU backend with two threads, opened once for the whole suite.
inline Device& two_thread_cpu_device() {
  static OpenBackend cpu = open_cpu(2);
  return *cpu.device;
}

// `n` token ids drawn uniformly from [lowest, vocab).
inline std::vector<int32_t> random_tokens(std::mt19937& rng, int32_t n, int32_t vocab,
                                          int32_t lowest = 0) {
  std::uniform_int_distribution<int32_t> u(lowest, vocab - 1);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = u(rng);
  return t;
}

// What train/reference_forward.py prints for `arguments` (the model files and options) and
// `tokens`; its exit status must be 0.
inline std::string run_reference_forward(const std::string& arguments,
                                         const std::vector<int32_t>& tokens) {
  const std::string cmd = "/usr/bin/python3 " + std::string(SPECD_SOURCE_DIR) +
                          "/train/reference_forward.py " + arguments + " --tokens " +
                          join_ids(tokens);
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  REQUIRE(pclose(pipe) == 0);
  return out;
}

}  // namespace specd::test
