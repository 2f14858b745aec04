#include "bench/report_files.hpp"

#include <filesystem>
#include <fstream>

#include "bench/report_charts.hpp"
#include "bench/report_json.hpp"
#include "bench/report_markdown.hpp"
#include "common/error.hpp"

namespace specd::bench {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error(path + ": cannot write");
}

}  // namespace

void write_reports(const BenchResults& results, const std::string& dir) {
  std::filesystem::create_directories(dir);
  write_file(dir + "/report.json", format_report_json(results));
  write_file(dir + "/report.md", format_report_markdown(results));
  write_file(dir + "/speedup.svg", speedup_chart(results));
  write_file(dir + "/per_position.svg", per_position_chart(results));
  write_file(dir + "/predicted.svg", predicted_chart(results));
}

}  // namespace specd::bench
