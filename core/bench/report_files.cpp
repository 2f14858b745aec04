#include "bench/report_files.hpp"

#include <filesystem>

#include "bench/report_charts.hpp"
#include "bench/report_json.hpp"
#include "bench/report_markdown.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"

namespace specd::bench {

// Each file through write_file: every write and the close checked, with the reason.
void write_reports(const BenchResults& results, const std::string& dir) {
  std::filesystem::create_directories(dir);
  write_file(dir + "/report.json", format_report_json(results));
  write_file(dir + "/report.md", format_report_markdown(results));
  write_file(dir + "/speedup.svg", speedup_chart(results));
  write_file(dir + "/per_position.svg", per_position_chart(results));
  write_file(dir + "/predicted.svg", predicted_chart(results));
}

}  // namespace specd::bench
