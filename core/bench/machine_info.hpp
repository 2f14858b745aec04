// The machine a bench ran on (report.json "machine"), and the process's peak memory.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

// CPU model from /proc/cpuinfo ("unknown" elsewhere) and online logical CPUs.
MachineInfo describe_machine();
// Peak resident set of this process so far, in MB (getrusage ru_maxrss).
double peak_rss_mb();

}  // namespace specd::bench
