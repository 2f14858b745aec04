// Where a device's time goes, op by op. With $SPECD_CPU_PROFILE set to a file path (or "-" for
// stderr) when the device opens, every op call is timed on the device thread (wall clock, from
// its entry to its return, so a threaded op's wait for its workers counts) and summed per op,
// per row count m of its activations and, for matmul, per weight type; the table is written
// when the device closes (several devices of a process append their tables to one file).
// Unset, empty or "0": off, and an op pays one branch.
//
// A forward of m tokens is a sequence of ops with the same m, so the rows of one m add up to
// the device's part of that forward; the time between ops (the caller's own work) is not in
// the table.
//
// Thread rules: one device thread calls the ops (the device's own rule); the profile is its.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "specd/backend.h"

namespace specd::cpu {

class OpProfile {
 public:
  // Null when $SPECD_CPU_PROFILE is off; throws naming the variable and the path when the
  // file cannot be created. `device` names the device in the table's header.
  static std::unique_ptr<OpProfile> from_env(const std::string& device);
  ~OpProfile();  // writes the table
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // One call of `op` (a string literal) on m rows; `weights` the matmul's weight type, else
  // SPECD_DTYPE_F32.
  void add(const char* op, specd_dtype weights, int64_t m, std::chrono::nanoseconds took);

  // The table as written at close: per m, each op's calls, total and mean time and share.
  std::string table() const;

 private:
  OpProfile(std::FILE* out, bool owns, std::string path, std::string device);

  struct Key {
    int64_t m;
    std::string op;
    bool operator<(const Key& o) const { return m != o.m ? m < o.m : op < o.op; }
  };
  struct Sum {
    int64_t calls = 0;
    std::chrono::nanoseconds total{0};
  };
  std::map<Key, Sum> sums_;
  std::FILE* out_;
  bool owns_;
  std::string path_;
  std::string device_;
};

// Times one op call into `profile` (nothing when it is null). m is read from `rows` (its
// rows, or its cols for an index vector), the weight type from `weights`, both only when the
// call ends and only from views whose struct_size holds them: the op checks its views itself.
class OpTimer {
 public:
  OpTimer(OpProfile* profile, const char* op, const specd_view* rows, bool cols = false,
          const specd_view* weights = nullptr)
      : profile_(profile), op_(op), rows_(rows), weights_(weights), cols_(cols) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (!profile_) return;
    const auto took = std::chrono::steady_clock::now() - start_;
    const int64_t m = readable(rows_) ? (cols_ ? rows_->cols : rows_->rows) : -1;
    profile_->add(op_, readable(weights_) ? weights_->dtype : SPECD_DTYPE_F32, m, took);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  static bool readable(const specd_view* v) { return v && v->struct_size >= sizeof(specd_view); }

  OpProfile* profile_;
  const char* op_;
  const specd_view* rows_;
  const specd_view* weights_;
  bool cols_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specd::cpu
