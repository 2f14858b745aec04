#include "common/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace specd {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISREG(mode)) return "";
  return "not a regular file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports whether the close succeeded (a late write error shows here).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

}  // namespace

std::string file_kind_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return kind_of(st.st_mode);
}

void check_regular_file(const std::string& path, const std::string& what) {
  const std::string kind = file_kind_problem(path);
  if (!kind.empty()) throw UsageError(path + ": " + what + " is " + kind + ", not a regular file");
}

std::string read_text_file(const std::string& path, const std::string& what, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever if none.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw UsageError(path + ": cannot open " + what + ": " + std::strerror(errno));
  return read_text_fd(fd.get(), path, what, max_bytes);
}

std::string read_text_fd(int fd, const std::string& path, const std::string& what,
                         size_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw UsageError(path + ": cannot stat " + what + ": " + std::strerror(errno));
  // A character device is read only when it is a terminal or /dev/null: /dev/zero or
  // /dev/urandom would never end.
  struct stat null_st {};
  const bool readable_device =
      S_ISCHR(st.st_mode) &&
      (::isatty(fd) || (::stat("/dev/null", &null_st) == 0 && null_st.st_rdev == st.st_rdev));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !readable_device)
    throw UsageError(path + ": " + what + " is " + kind_of(st.st_mode) + ", not a file");
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes)
    throw UsageError(path + ": " + what + " is " + std::to_string(st.st_size) +
                     " bytes, more than the " + std::to_string(max_bytes) + " read at most");
  // From here reads may wait, as reading any pipe does: there is a writer, or the read
  // ends at once.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      if (text.size() + static_cast<size_t>(n) > max_bytes)
        throw UsageError(path + ": " + what + " holds more than the " + std::to_string(max_bytes) +
                         " bytes read at most");
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      throw UsageError(path + ": cannot read " + what + ": " + std::strerror(errno));
    }
  }
  if (text.empty() && S_ISFIFO(st.st_mode) && path != "standard input")
    throw UsageError(path + ": " + what + " is a FIFO and nothing was written to it");
  return text;
}

void write_file(const std::string& path, std::string_view bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (fd.get() < 0) throw Error(path + ": cannot create: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path + ": cannot write: " + std::strerror(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
  if (!fd.close()) throw Error(path + ": cannot write: " + std::strerror(errno));
}

void flush_stdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (!flushed || std::ferror(stdout))
    throw Error(std::string("standard output: cannot write: ") +
                std::strerror(err != 0 ? err : EIO));
}

}  // namespace specd
