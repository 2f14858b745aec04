// Read-only POSIX memory map of a whole file. Move-only; unmaps on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace specd {

// Every live mapping is recorded (path and address range, up to 64 at once) so that a
// fault inside one can be named: a file truncated by another process while mapped turns
// a read of its lost pages into SIGBUS. Reads of mapped weights happen all over the model
// and backend code, so there is no single place to check; instead the program (the CLI)
// installs a process-wide SIGBUS handler with install_mapped_file_fault_handler(). It
// prints "specd: error: model file <path> was truncated or changed while in use" and
// exits 1 when the fault lies in a recorded mapping; any other SIGBUS keeps its default
// action. The handler only reads the records and calls write() and _exit().
void install_mapped_file_fault_handler();

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
  // Drops the pages lying wholly inside [p, p + n) (a range of this mapping) from the
  // process's memory: a hint for data copied elsewhere; a later read maps them from the file
  // again (the mapping is private and never written). Errors are ignored.
  void drop_pages(const void* p, size_t n) const;

 private:
  static void unmap(const uint8_t* data, size_t size);

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace specd
