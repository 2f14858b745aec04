// Read-only POSIX memory map of a whole file. Move-only; unmaps on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace specd {

class MappedFile {
 public:
  // Throws specd::Error naming the path when the file cannot be opened or mapped.
  static MappedFile open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace specd
