#include "gguf/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include "common/error.hpp"

namespace specd {
namespace {

// The records the SIGBUS handler reads: a slot is claimed with `used`, filled, then
// published by storing `start` (release); the handler reads `start` (acquire) first.
struct MappingRecord {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> start{0};
  size_t size = 0;
  char path[1024] = {};
};
MappingRecord g_mappings[64];

void record_mapping(const void* data, size_t size, const std::string& path) {
  for (MappingRecord& r : g_mappings) {
    bool expected = false;
    if (!r.used.compare_exchange_strong(expected, true)) continue;
    r.size = size;
    const size_t n = std::min(path.size(), sizeof r.path - 1);
    std::memcpy(r.path, path.data(), n);
    r.path[n] = '\0';
    r.start.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return;
  }
  // More than 64 mappings at once: this one's faults are not named (default SIGBUS).
}

void forget_mapping(const void* data) {
  for (MappingRecord& r : g_mappings)
    if (r.start.load(std::memory_order_acquire) == reinterpret_cast<uintptr_t>(data)) {
      r.start.store(0, std::memory_order_release);
      r.used.store(false);
      return;
    }
}

void write_all(const char* text, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(2, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void on_bus_error(int signal, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const MappingRecord& r : g_mappings) {
    const uintptr_t start = r.start.load(std::memory_order_acquire);
    if (start == 0 || addr < start || addr - start >= r.size) continue;
    static const char head[] = "specd: error: model file ";
    static const char tail[] = " was truncated or changed while in use\n";
    write_all(head, sizeof head - 1);
    write_all(r.path, std::strlen(r.path));
    write_all(tail, sizeof tail - 1);
    ::_exit(1);
  }
  // Not a mapped file's fault: the default action (pending until this handler returns).
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void install_mapped_file_fault_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_bus_error;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO;
  ::sigaction(SIGBUS, &action, nullptr);
}

MappedFile MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer, forever if none comes;
  // it has no effect on the regular files this maps (anything else is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file (" +
                (S_ISFIFO(st.st_mode)  ? "a FIFO"
                 : S_ISDIR(st.st_mode) ? "a directory"
                                       : "a device or socket") +
                "); a model file is memory-mapped");
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw Error(path + ": cannot mmap: " + std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(p);
    record_mapping(p, file.size_, path);
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) unmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::drop_pages(const void* p, size_t n) const {
  const auto* b = static_cast<const uint8_t*>(p);
  if (!data_ || b < data_ || n > size_ || b - data_ > static_cast<ptrdiff_t>(size_ - n)) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(b) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(b) + n) / page * page;
  if (end > first) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (data_) unmap(data_, size_);
}

void MappedFile::unmap(const uint8_t* data, size_t size) {
  forget_mapping(data);
  ::munmap(const_cast<uint8_t*>(data), size);
}

}  // namespace specd
