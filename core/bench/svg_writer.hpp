// A minimal SVG writer for the bench charts: rectangles, lines, circles and text in user
// units, escaped and well-formed, no dependencies.
#pragma once

#include <string>

namespace specd::bench {

class SvgWriter {
 public:
  SvgWriter(double width, double height);
  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& title = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            bool dashed = false);
  void circle(double cx, double cy, double r, const std::string& fill,
              const std::string& title = "");
  // anchor: "start", "middle" or "end".
  void text(double x, double y, const std::string& s, double size = 12,
            const std::string& anchor = "start", const std::string& fill = "#222");
  std::string str() const;  // the complete document

 private:
  double width_, height_;
  std::string body_;
};

// Text with &, <, >, " and ' escaped for XML.
std::string xml_escape(const std::string& s);

}  // namespace specd::bench
