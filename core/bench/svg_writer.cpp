#include "bench/svg_writer.hpp"

#include <cstdio>

namespace specd::bench {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string title_element(const std::string& title) {
  return title.empty() ? "" : "<title>" + xml_escape(title) + "</title>";
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgWriter::SvgWriter(double width, double height) : width_(width), height_(height) {}

void SvgWriter::rect(double x, double y, double w, double h, const std::string& fill,
                     const std::string& title) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
           num(h) + "\" fill=\"" + xml_escape(fill) + "\">" + title_element(title) + "</rect>\n";
}

void SvgWriter::line(double x1, double y1, double x2, double y2, const std::string& stroke,
                     double width, bool dashed) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
           num(y2) + "\" stroke=\"" + xml_escape(stroke) + "\" stroke-width=\"" + num(width) +
           "\"" + (dashed ? " stroke-dasharray=\"4 3\"" : "") + "/>\n";
}

void SvgWriter::circle(double cx, double cy, double r, const std::string& fill,
                       const std::string& title) {
  body_ += "<circle cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" + num(r) + "\" fill=\"" +
           xml_escape(fill) + "\">" + title_element(title) + "</circle>\n";
}

void SvgWriter::text(double x, double y, const std::string& s, double size,
                     const std::string& anchor, const std::string& fill) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
           "\" font-family=\"sans-serif\" text-anchor=\"" + xml_escape(anchor) + "\" fill=\"" +
           xml_escape(fill) + "\">" + xml_escape(s) + "</text>\n";
}

std::string SvgWriter::str() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         num(width_) + "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " +
         num(height_) + "\">\n" + "<rect x=\"0\" y=\"0\" width=\"" + num(width_) + "\" height=\"" +
         num(height_) + "\" fill=\"white\"/>\n" + body_ + "</svg>\n";
}

}  // namespace specd::bench
