// A per-process scratch directory for test files, removed with its contents on destruction.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace specd::test {

class ScratchDir {
 public:
  // `prefix` followed by the process id, under the system's temporary directory.
  explicit ScratchDir(const std::string& prefix)
      : path_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace specd::test
