#include "server/client_redaction.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <utility>
#include <vector>

namespace specd::server {
namespace {

struct Hidden {
  std::string path;
  std::string shown_as;
};

std::mutex hidden_mutex;
std::vector<Hidden> hidden;  // longest first, so that a folder never hides half a file's path

void hide(const std::string& path, const char* shown_as) {
  // A bare name or "-" (standard input) tells a client nothing.
  if (path.size() < 2 || path.find('/') == std::string::npos) return;
  for (const Hidden& h : hidden)
    if (h.path == path) return;
  hidden.push_back({path, shown_as});
  std::stable_sort(hidden.begin(), hidden.end(),
                   [](const Hidden& a, const Hidden& b) { return a.path.size() > b.path.size(); });
}

// Past ":12" or ":12:5" at `at`, where a location's line and column follow its file.
size_t skip_line_column(const std::string& s, size_t at) {
  for (int part = 0; part < 2; ++part) {
    if (at + 1 >= s.size() || s[at] != ':' || !std::isdigit(static_cast<unsigned char>(s[at + 1])))
      break;
    ++at;
    while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
  }
  return at;
}

}  // namespace

void hide_from_clients(const Config& config) {
  std::lock_guard<std::mutex> lock(hidden_mutex);
  constexpr const char* kFile = "a server file";
  hide(config.path, "the server's configuration");
  for (const auto& [key, location] : config.locations) {
    // "file:line:column", or "--set section.key" for an override.
    size_t end = location.size();
    for (int part = 0; part < 2; ++part) {
      const size_t colon = location.rfind(':', end - 1);
      if (colon == std::string::npos || colon == 0) break;
      end = colon;
    }
    hide(location.substr(0, end), "the server's configuration");
  }
  for (const std::string* path :
       {&config.target.model, &config.proposer.model, &config.sampling.grammar_file,
        &config.sampling.json_schema_file, &config.server.chat_template_file})
    hide(*path, kFile);
  for (const std::string& path : config.plugins.paths) hide(path, kFile);
  for (const auto* params :
       {&config.proposer.params, &config.acceptance.params, &config.verifier.params})
    for (const PluginParam& p : *params) hide(p.string_value, kFile);
}

std::string redact_for_client(std::string message) {
  std::lock_guard<std::mutex> lock(hidden_mutex);
  for (const Hidden& h : hidden) {
    for (size_t at = message.find(h.path); at != std::string::npos;
         at = message.find(h.path, at + h.shown_as.size())) {
      const size_t end = skip_line_column(message, at + h.path.size());
      message.replace(at, end - at, h.shown_as);
    }
  }
  return message;
}

}  // namespace specd::server
