// The CPU backend's op profile ($SPECD_CPU_PROFILE, plugins/cpu/runtime/op_profile.hpp): the table
// written when a device closes counts every op call under its m and, for matmul, its weight
// type, and the devices of a process add their tables to one file; a path that cannot hold
// the table is refused when the device opens, naming it.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The calls column of the table's line for (m, op), or -1 when there is none.
int64_t calls_of(const std::string& table, int64_t m, const std::string& op) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int64_t lm = 0, calls = 0;
    std::string name, type;
    fields >> lm >> name;
    if (name == "matmul") fields >> type, name += " " + type;
    fields >> calls;
    if (lm == m && name == op) return calls;
  }
  return -1;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string("specd-profile-") + std::to_string(::getpid()) + "-" + name))
      .string();
}

}  // namespace

TEST_CASE("cpu op profile: every call counted under its m and weight type") {
  const std::string path = temp_path("table.txt");
  std::mt19937 rng(31);
  const int64_t k = 256, n = 32;
  {
    const ScopedEnv profile("SPECD_CPU_PROFILE", path.c_str());
    const OpenBackend cpu = open_cpu(2);
    Device& dev = *cpu.device;
    Buffer bw = upload_vec(dev, encode(SPECD_DTYPE_Q4_K, random_floats(rng, n * k), n, k));
    Buffer bn = upload_vec(dev, random_floats(rng, k));
    for (int64_t m : {3, 3, 5}) {
      Buffer bx = upload_vec(dev, random_floats(rng, m * k)), by = dev.alloc(m * n * 4);
      dev.matmul(bx.view(SPECD_DTYPE_F32, m, k), bw.view(SPECD_DTYPE_Q4_K, n, k),
                 by.view(SPECD_DTYPE_F32, m, n));
      dev.rms_norm(bx.view(SPECD_DTYPE_F32, m, k), bn.view(SPECD_DTYPE_F32, 1, k), 1e-5f,
                   bx.view(SPECD_DTYPE_F32, m, k));
    }
    const bool written_early = std::filesystem::exists(path) && !read_text(path).empty();
    CHECK_FALSE(written_early);              // the table is written when the device closes
    const OpenBackend second = open_cpu(1);  // a second device appends its own table
    Buffer bx = upload_vec(*second.device, random_floats(rng, 7 * k));
    Buffer bn2 = upload_vec(*second.device, random_floats(rng, k));
    second.device->rms_norm(bx.view(SPECD_DTYPE_F32, 7, k), bn2.view(SPECD_DTYPE_F32, 1, k), 1e-5f,
                            bx.view(SPECD_DTYPE_F32, 7, k));
  }
  const std::string table = read_text(path);
  INFO(table);
  CHECK(table.find(" of the process, cpu (2 threads") != std::string::npos);
  CHECK(table.find(" of the process, cpu (1 threads") != std::string::npos);
  CHECK(calls_of(table, 7, "rms_norm") == 1);
  CHECK(calls_of(table, 3, "matmul q4_K") == 2);
  CHECK(calls_of(table, 5, "matmul q4_K") == 1);
  CHECK(calls_of(table, 3, "rms_norm") == 2);
  CHECK(calls_of(table, 5, "rms_norm") == 1);
  CHECK(calls_of(table, 3, "attention") == -1);
  std::filesystem::remove(path);
}

TEST_CASE("cpu op profile: off by default and for 0; a path that cannot hold it is refused") {
  const std::string path = temp_path("off.txt");
  {
    const ScopedEnv profile("SPECD_CPU_PROFILE", "0");
    const OpenBackend cpu = open_cpu(1);
  }
  CHECK_FALSE(std::filesystem::exists(path));
  const std::string dir = temp_path("dir"), fifo = temp_path("fifo");
  std::filesystem::create_directory(dir);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& bad : {dir, fifo, dir + "/missing/table.txt"}) {
    const ScopedEnv profile("SPECD_CPU_PROFILE", bad.c_str());
    const std::string error = cpu_open_error();
    INFO(error);
    CHECK(error.find("SPECD_CPU_PROFILE=" + bad) != std::string::npos);
  }
  std::filesystem::remove(fifo);
  std::filesystem::remove_all(dir);
}
