#include "runtime/op_profile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "specd/cpp/backend.hpp"

namespace specd::cpu {

namespace {

constexpr const char* kVariable = "SPECD_CPU_PROFILE";

// Opens `path` for writing without blocking on a FIFO and without following it into anything
// but a regular file: the table is a file the user reads afterwards. The first device of the
// process to name a path empties it; every device appends its table to it when it closes (a
// draft's device beside its target's).
std::FILE* open_regular(const std::string& path) {
  const std::string setting = std::string("cpu: ") + kVariable + "=" + path;
  static std::mutex mutex;
  static std::set<std::string> opened;
  const std::lock_guard<std::mutex> lock(mutex);
  const bool first = opened.insert(path).second;
  const auto not_regular = [&] {
    return std::invalid_argument(setting +
                                 " is not a regular file (give a file path, or - for stderr)");
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw not_regular();
  const int fd =
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC | (first ? O_TRUNC : 0), 0644);
  if (fd < 0) {
    if (first) opened.erase(path);
    throw std::invalid_argument(setting + ": cannot create the file: " + std::strerror(errno));
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced since the check above
    ::close(fd);
    throw not_regular();
  }
  std::FILE* f = ::fdopen(fd, "w");
  if (!f) {
    ::close(fd);
    throw std::invalid_argument(setting + ": " + std::strerror(errno));
  }
  return f;
}

}  // namespace

std::unique_ptr<OpProfile> OpProfile::from_env(const std::string& device) {
  const char* env = std::getenv(kVariable);
  if (!env || !*env || std::strcmp(env, "0") == 0) return nullptr;
  const std::string path = env;
  static std::atomic<int> opened{0};  // devices of this process, in the order they opened
  const std::string label = "device " + std::to_string(++opened) + " of the process, " + device;
  if (path == "-") return std::unique_ptr<OpProfile>(new OpProfile(stderr, false, path, label));
  return std::unique_ptr<OpProfile>(new OpProfile(open_regular(path), true, path, label));
}

OpProfile::OpProfile(std::FILE* out, bool owns, std::string path, std::string device)
    : out_(out), owns_(owns), path_(std::move(path)), device_(std::move(device)) {}

OpProfile::~OpProfile() {
  const std::string text = table();
  const bool wrote = std::fwrite(text.data(), 1, text.size(), out_) == text.size();
  const bool flushed = owns_ ? std::fclose(out_) == 0 : std::fflush(out_) == 0;
  if (!wrote || !flushed)  // a destructor cannot throw: say so where the user looks
    std::fprintf(stderr, "cpu: %s=%s: writing the profile failed: %s\n", kVariable, path_.c_str(),
                 std::strerror(errno));
}

void OpProfile::add(const char* op, specd_dtype weights, int64_t m, std::chrono::nanoseconds took) {
  Key key{m, op};
  if (weights != SPECD_DTYPE_F32) key.op += std::string(" ") + sdk::dtype_name(weights);
  Sum& s = sums_[key];
  ++s.calls;
  s.total += took;
}

std::string OpProfile::table() const {
  std::string out = "# specd cpu profile of " + device_ +
                    ": wall time of the device's op calls, summed per m (rows) and op\n"
                    "#    m  op                  calls     total_ms   us_per_call  share_of_m\n";
  char line[160];
  for (auto it = sums_.begin(); it != sums_.end();) {
    const int64_t m = it->first.m;
    std::vector<std::pair<std::string, Sum>> rows;
    std::chrono::nanoseconds all{0};
    for (; it != sums_.end() && it->first.m == m; ++it) {
      rows.emplace_back(it->first.op, it->second);
      all += it->second.total;
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
    for (const auto& [op, s] : rows) {
      const double ms = std::chrono::duration<double, std::milli>(s.total).count();
      std::snprintf(line, sizeof line, "%6lld  %-18s %6lld %12.3f %13.2f %10.1f%%\n",
                    static_cast<long long>(m), op.c_str(), static_cast<long long>(s.calls), ms,
                    1000.0 * ms / static_cast<double>(s.calls),
                    all.count() > 0 ? 100.0 * static_cast<double>(s.total.count()) /
                                          static_cast<double>(all.count())
                                    : 0.0);
      out += line;
    }
  }
  return out;
}

}  // namespace specd::cpu
