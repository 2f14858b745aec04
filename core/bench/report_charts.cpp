#include "bench/report_charts.hpp"

#include <algorithm>
#include <cstdio>

#include "bench/svg_writer.hpp"

namespace specd::bench {
namespace {

const char* kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string color(size_t i) {
  return kColors[i % (sizeof kColors / sizeof *kColors)];
}

std::string fmt(double v, const char* f = "%.2f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Plot area and a linear y axis from 0 to y_max with gridlines.
struct Frame {
  double left = 60, top = 40, width, height, y_max;
  double y(double v) const { return top + height - height * std::clamp(v / y_max, 0.0, 1.0); }
};

void draw_axes(SvgWriter& svg, const Frame& f, const std::string& y_title, int ticks = 5) {
  for (int i = 0; i <= ticks; ++i) {
    double v = f.y_max * i / ticks;
    svg.line(f.left, f.y(v), f.left + f.width, f.y(v), "#ddd");
    svg.text(f.left - 6, f.y(v) + 4, fmt(v), 11, "end");
  }
  svg.line(f.left, f.top, f.left, f.top + f.height, "#444");
  svg.line(f.left, f.top + f.height, f.left + f.width, f.top + f.height, "#444");
  svg.text(14, f.top - 12, y_title, 12, "start");
}

void legend(SvgWriter& svg, double x, double y, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    svg.rect(x, y + 18.0 * double(i) - 10, 12, 12, color(i));
    svg.text(x + 18, y + 18.0 * double(i), names[i], 12);
  }
}

}  // namespace

std::string arm_label(const ArmResult& arm) {
  return arm.name + (arm.lossy ? " ⚠ lossy" : "");
}

std::string cell_label(const CellResult& c) {
  return c.task + " T=" + fmt(c.temperature, "%g") + (c.note.empty() ? "" : " (" + c.note + ")");
}

std::string constructed_suffix(const BenchResults& r) {
  for (const auto& n : r.notes)
    if (n.find("constructed model") != std::string::npos) return " — constructed model";
  return "";
}

std::string speedup_chart(const BenchResults& r) {
  std::vector<const ArmResult*> arms;
  for (size_t a = 1; a < r.arms.size(); ++a) arms.push_back(&r.arms[a]);
  std::vector<std::string> cells;
  double y_max = 1.5;
  for (const ArmResult* a : arms)
    for (const CellResult& c : a->cells) {
      if (std::find(cells.begin(), cells.end(), cell_label(c)) == cells.end())
        cells.push_back(cell_label(c));
      y_max = std::max({y_max, c.speedup_ci.second * 1.1, c.speedup * 1.1});
    }
  const double group = std::max(60.0, 22.0 * double(arms.size()) + 20);
  Frame f;
  f.width = group * double(std::max<size_t>(cells.size(), 1));
  f.height = 260;
  f.y_max = y_max;
  SvgWriter svg(f.left + f.width + 260, f.top + f.height + 110);
  svg.text(f.left, 20,
           "Speedup over plain decoding (median of paired ratios, 95% CI)" + constructed_suffix(r),
           14);
  draw_axes(svg, f, "speedup ×");
  svg.line(f.left, f.y(1), f.left + f.width, f.y(1), "#c00", 1, true);
  for (size_t ci = 0; ci < cells.size(); ++ci) {
    const double x0 = f.left + group * double(ci) + 10;
    for (size_t ai = 0; ai < arms.size(); ++ai) {
      for (const CellResult& c : arms[ai]->cells) {
        if (cell_label(c) != cells[ci]) continue;
        const double x = x0 + 22.0 * double(ai);
        svg.rect(x, f.y(c.speedup), 18, f.y(0) - f.y(c.speedup), color(ai),
                 arm_label(*arms[ai]) + ", " + cells[ci] + ": " + fmt(c.speedup) + "×");
        svg.line(x + 9, f.y(c.speedup_ci.first), x + 9, f.y(c.speedup_ci.second), "#222", 1.5);
      }
    }
    svg.text(x0, f.top + f.height + 16 + 14.0 * double(ci % 3), cells[ci], 11);
  }
  std::vector<std::string> names;
  for (const ArmResult* a : arms) names.push_back(arm_label(*a));
  legend(svg, f.left + f.width + 20, f.top + 10, names);
  return svg.str();
}

std::string per_position_chart(const BenchResults& r) {
  size_t depth = 1;
  std::vector<std::pair<std::string, const CellResult*>> series;
  for (size_t a = 1; a < r.arms.size(); ++a)
    for (const CellResult& c : r.arms[a].cells) {
      if (c.per_position.empty()) continue;
      series.push_back({arm_label(r.arms[a]) + " · " + cell_label(c), &c});
      depth = std::max(depth, c.per_position.size());
    }
  Frame f;
  f.width = std::max(200.0, 50.0 * double(depth));
  f.height = 240;
  f.y_max = 1;
  SvgWriter svg(f.left + f.width + 380,
                std::max(f.top + f.height + 60, 60 + 18.0 * double(series.size())));
  svg.text(f.left, 20, "Acceptance rate by draft position" + constructed_suffix(r), 14);
  draw_axes(svg, f, "accepted / drafted");
  auto x_at = [&](size_t d) {
    return f.left + (depth > 1 ? f.width * double(d) / double(depth - 1) : f.width / 2);
  };
  for (size_t d = 0; d < depth; ++d)
    svg.text(x_at(d), f.top + f.height + 16, std::to_string(d + 1), 11, "middle");
  svg.text(f.left + f.width / 2, f.top + f.height + 34, "draft position", 12, "middle");
  std::vector<std::string> names;
  for (size_t s = 0; s < series.size(); ++s) {
    const auto& pp = series[s].second->per_position;
    for (size_t d = 0; d < pp.size(); ++d) {
      if (d > 0) svg.line(x_at(d - 1), f.y(pp[d - 1]), x_at(d), f.y(pp[d]), color(s), 2);
      svg.circle(x_at(d), f.y(pp[d]), 3, color(s), series[s].first + ": " + fmt(pp[d]));
    }
    names.push_back(series[s].first);
  }
  legend(svg, f.left + f.width + 20, f.top + 10, names);
  return svg.str();
}

std::string predicted_chart(const BenchResults& r) {
  double m = 1.5;
  for (size_t a = 1; a < r.arms.size(); ++a)
    for (const CellResult& c : r.arms[a].cells)
      m = std::max({m, c.speedup * 1.1, c.predicted_speedup * 1.1});
  Frame f;
  f.width = 300;
  f.height = 300;
  f.y_max = m;
  SvgWriter svg(f.left + f.width + 380, f.top + f.height + 60);
  svg.text(f.left, 20, "Predicted E/(v(k)+k·c) vs measured speedup" + constructed_suffix(r), 14);
  draw_axes(svg, f, "measured ×");
  auto x_at = [&](double v) { return f.left + f.width * std::clamp(v / m, 0.0, 1.0); };
  for (int i = 0; i <= 5; ++i)
    svg.text(x_at(m * i / 5), f.top + f.height + 16, fmt(m * i / 5), 11, "middle");
  svg.text(f.left + f.width / 2, f.top + f.height + 34, "predicted ×", 12, "middle");
  svg.line(x_at(0), f.y(0), x_at(m), f.y(m), "#999", 1, true);
  std::vector<std::string> names;
  for (size_t a = 1; a < r.arms.size(); ++a) {
    for (const CellResult& c : r.arms[a].cells)
      svg.circle(x_at(c.predicted_speedup), f.y(c.speedup), 4, color(a - 1),
                 arm_label(r.arms[a]) + " · " + cell_label(c) + ": predicted " +
                     fmt(c.predicted_speedup) + ", measured " + fmt(c.speedup));
    names.push_back(arm_label(r.arms[a]));
  }
  legend(svg, f.left + f.width + 20, f.top + 10, names);
  return svg.str();
}

}  // namespace specd::bench
