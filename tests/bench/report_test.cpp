#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "bench/report_charts.hpp"
#include "bench/report_json.hpp"
#include "bench/report_markdown.hpp"
#include "bench/svg_writer.hpp"
#include "json_parse.hpp"

using namespace specd::bench;

namespace {

BenchResults sample_results() {
  BenchResults r;
  r.mode = "ab";
  r.config_path = "configs/ab.toml";
  r.config_text = "[bench]\ntasks = [\"code\"]\n# \"quoted\" \\ text\n";
  r.machine = {"Some CPU @ 2GHz", 2, 1, "cpu"};
  ArmResult plain;
  plain.name = "plain";
  plain.strategy = "none";
  plain.label = "exact";
  plain.verdict = "reference";
  CellResult pc;
  pc.task = "code";
  pc.tau = 1;
  pc.tokens_per_s = 100;
  plain.cells.push_back(pc);
  ArmResult exact;
  exact.name = "ngram <exact>";
  exact.strategy = "ngram";
  exact.rule = "exact-match";
  exact.label = "exact";
  exact.verdict = "lossless";
  CellResult c = pc;
  c.tau = 2.5;
  c.acceptance_rate = 0.6;
  c.per_position = {0.8, 0.6, 0.4};
  c.speedup = 1.8;
  c.speedup_ci = {1.5, 2.1};
  c.predicted_speedup = 2.0;
  c.verdict = "lossless";
  exact.cells.push_back(c);
  c.temperature = 0.7;
  c.speedup = 0.9;
  c.speedup_ci = {0.7, 1.1};
  exact.cells.push_back(c);
  ArmResult lossy = exact;
  lossy.name = "draft+typical";
  lossy.rule = "typical";
  lossy.label = "lossy";
  lossy.verdict = "lossy";
  lossy.lossy = true;
  r.arms = {plain, exact, lossy};
  return r;
}

// Well-formed enough for any XML reader: balanced tags, quoted attributes, escaped text.
void check_well_formed_svg(const std::string& svg) {
  REQUIRE(svg.rfind("<?xml", 0) == 0);
  CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  std::vector<std::string> open;
  size_t i = svg.find("?>") + 2;
  while ((i = svg.find('<', i)) != std::string::npos) {
    size_t end = svg.find('>', i);
    REQUIRE(end != std::string::npos);
    std::string tag = svg.substr(i + 1, end - i - 1);
    // Text between tags holds no raw '<' or '&' that is not an entity.
    if (tag.rfind("/", 0) == 0) {
      REQUIRE(!open.empty());
      CHECK(open.back() == tag.substr(1));
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    size_t next = svg.find('<', end);
    std::string text = svg.substr(end + 1, next == std::string::npos ? 0 : next - end - 1);
    for (size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1))
      CHECK(text.find(';', a) != std::string::npos);
    i = end + 1;
  }
  CHECK(open.empty());
}

}  // namespace

TEST_CASE("report.json parses back with every arm's lossless column and numbers") {
  const BenchResults r = sample_results();
  const specd::test::Json j = specd::test::parse_json(format_report_json(r));
  CHECK(j["mode"].s == "ab");
  CHECK(j["config"].s == r.config_text);
  CHECK(j["machine"]["cpu_model"].s == "Some CPU @ 2GHz");
  CHECK(j["machine"]["cores"].n == 2);
  REQUIRE(j["arms"].a.size() == 3);
  for (const auto& arm : j["arms"].a) {
    for (const char* k : {"name", "strategy", "rule", "label", "verdict"}) CHECK(arm.has(k));
    for (const auto& cell : arm["cells"].a) {
      for (const char* k : {"task", "temperature", "tau", "acceptance_rate", "tokens_per_s",
                            "speedup", "predicted_speedup", "per_position"})
        CHECK(cell.has(k));
      CHECK(cell["speedup_ci"].a.size() == 2);
    }
  }
  CHECK(j["arms"].a[1]["cells"].a[0]["speedup_ci"].a[0].n == doctest::Approx(1.5));
  CHECK(j["arms"].a[2]["mark"].s.find("lossy") != std::string::npos);
  CHECK(j["arms"].a[1]["mark"].s.empty());
}

TEST_CASE("report.md marks lossy arms in every row and shows the pairwise table") {
  const std::string md = format_report_markdown(sample_results());
  size_t rows = 0;
  for (size_t at = md.find("| draft+typical"); at != std::string::npos;
       at = md.find("| draft+typical", at + 1)) {
    const std::string marked = "| draft+typical ⚠ lossy";
    CHECK(md.substr(at, marked.size()) == marked);
    ++rows;
  }
  CHECK(rows >= 4);  // arms table, two result rows, pairwise rows
  CHECK(md.find("## Pairwise") != std::string::npos);
  // Every table row has as many cells as its header.
  auto cells = [](const std::string& line) { return std::count(line.begin(), line.end(), '|'); };
  std::istringstream lines(md);
  std::string line;
  long header = -1;
  while (std::getline(lines, line)) {
    if (line.rfind("| ", 0) != 0 && line.rfind("|---", 0) != 0) {
      header = -1;
      continue;
    }
    if (header < 0) header = cells(line);
    CHECK(cells(line) == header);
  }
  CHECK(md.find("[1.50, 2.10]") != std::string::npos);
}

TEST_CASE("SVG writer escapes text and the charts are well-formed") {
  SvgWriter w(100, 50);
  w.text(1, 2, "a < b & \"c\"");
  w.rect(0, 0, 10, 10, "#fff", "t<i>tle");
  const std::string s = w.str();
  CHECK(s.find("a &lt; b &amp; &quot;c&quot;") != std::string::npos);
  check_well_formed_svg(s);
  const BenchResults r = sample_results();
  for (const std::string& chart : {speedup_chart(r), per_position_chart(r), predicted_chart(r)}) {
    check_well_formed_svg(chart);
    CHECK(chart.find("⚠ lossy") != std::string::npos);
    CHECK(chart.find("ngram &lt;exact&gt;") != std::string::npos);
  }
  BenchResults constructed = r;
  constructed.notes = {"constructed model tiny f16: ..."};
  CHECK(speedup_chart(constructed).find("constructed model") != std::string::npos);
}
