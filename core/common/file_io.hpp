// Reading and writing whole files with every failure named: the path, what the file is
// for, and the system's reason. Nothing here blocks on a FIFO that has no writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specd {

// The most a text file read by read_text_file may hold unless the caller says otherwise.
constexpr size_t kMaxTextFileBytes = size_t{64} << 20;

// Reads a whole text file (a configuration, a prompt, a table). `what` says what the file
// is for ("configuration file", "prompt file") and starts every message after the path.
// Regular files, pipes and terminals are read to their end (so `-f <(cmd)` works); a
// directory, socket or device other than a terminal or /dev/null (/dev/zero, /dev/urandom)
// is refused.
// A named FIFO is opened without blocking: one that no process writes to is refused
// instead of waiting forever. More than `max_bytes` is refused as soon as it is read
// (a pipe that never ends costs no more memory than that).
// Throws UsageError naming the path.
std::string read_text_file(const std::string& path, const std::string& what,
                           size_t max_bytes = kMaxTextFileBytes);

// The same for an open descriptor (standard input: `path` names it in messages).
std::string read_text_fd(int fd, const std::string& path, const std::string& what,
                         size_t max_bytes = kMaxTextFileBytes);

// Refuses anything but a regular file at `path` (a model is memory-mapped), without
// opening it. Throws UsageError "<path>: <what> is a directory/FIFO/..., not a file".
// A path that does not exist passes: the caller's open says so.
void check_regular_file(const std::string& path, const std::string& what);

// Writes `bytes` to `path` (created or truncated) and closes it, checking every write and
// the close. Throws Error "<path>: cannot write: <reason>" (e.g. "No space left on device").
void write_file(const std::string& path, std::string_view bytes);

// Flushes standard output; throws Error "standard output: cannot write: <reason>" when it
// or an earlier write to it failed (a full disk, /dev/full, a closed pipe with SIGPIPE
// ignored). Commands call it before their plugin registry is destroyed: unloading a plugin
// may run library finalizers that flush stdout themselves (libcublas does), and the reason
// of a write that failed there would be lost ("Input/output error" is said then).
void flush_stdout();

// What stat() says `path` is, in words ("a directory", "a FIFO", ...); "" for a regular
// file or a path that cannot be stat'ed.
std::string file_kind_problem(const std::string& path);

}  // namespace specd
