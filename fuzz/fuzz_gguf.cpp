// GGUF reader: any bytes either open as a GgufFile whose every tensor lies inside the
// mapping (the reader's promise, gguf_reader.hpp) or throw specd::Error. Anything else (a
// crash, a sanitizer report, another exception such as std::bad_alloc for a huge count) is
// a finding. Files that open are also handed to the tokenizer loader, which reads the
// metadata arrays with its own expectations.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

// The reader maps a path; a memfd gives it one without touching the disk.
std::string memfd_path(const uint8_t* data, size_t size, int& fd) {
  fd = memfd_create("fuzz-gguf", 0);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

volatile uint8_t sink;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = -1;
  const std::string path = memfd_path(data, size, fd);
  try {
    specd::GgufFile file = specd::GgufFile::open(path);
    for (const specd::GgufTensor& t : file.tensors()) {
      // Touch the first and last byte: ASan reports it if the promise is broken.
      if (t.n_bytes == 0) continue;
      const auto* bytes = static_cast<const uint8_t*>(t.data);
      sink = bytes[0];
      sink = bytes[t.n_bytes - 1];
    }
    (void)file.get_string_opt("general.architecture");
    try {
      specd::Tokenizer tokenizer = specd::Tokenizer::from_gguf(file);
      std::vector<int32_t> ids = tokenizer.encode("def f(x):\n  return x  # \xc3\xa9\xff");
      (void)tokenizer.decode(ids);
    } catch (const specd::Error&) {
    }
  } catch (const specd::Error&) {
  }
  close(fd);
  return 0;
}
