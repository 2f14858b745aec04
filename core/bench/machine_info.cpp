#include "bench/machine_info.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace specd::bench {

MachineInfo describe_machine() {
  MachineInfo m;
  m.cpu_model = "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        m.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cores = n > 0 ? static_cast<uint32_t>(n) : 0;
  return m;
}

double peak_rss_mb() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

}  // namespace specd::bench
