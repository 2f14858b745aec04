#include "server/client_redaction.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
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

constexpr const char* kConfiguration = "the server's configuration";
constexpr const char* kFile = "a server file";
constexpr const char* kPluginFolder = "a plugin folder";

// Only what names a file: a path with a folder in it ("a/b" at least), never "./" or a bare
// word, which would garble unrelated text.
bool names_a_file(const std::string& path) {
  return path.size() >= 3 && path.find('/') != std::string::npos &&
         path.find_first_not_of("./") != std::string::npos;
}

void hide(const std::string& path, const char* shown_as) {
  for (const Hidden& h : hidden)
    if (h.path == path) return;
  hidden.push_back({path, shown_as});
  std::stable_sort(hidden.begin(), hidden.end(),
                   [](const Hidden& a, const Hidden& b) { return a.path.size() > b.path.size(); });
}

void hide_path(const std::string& path, const char* shown_as) {
  if (names_a_file(path)) hide(path, shown_as);
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

void hide_from_clients(const Config& config, const std::vector<std::string>& plugin_folders) {
  std::lock_guard<std::mutex> lock(hidden_mutex);
  // The configuration's file, even by a bare name ("server.toml:12:1" is a location).
  if (config.path.size() >= 3) hide(config.path, kConfiguration);
  for (const auto& [key, location] : config.locations) {
    // "file:line:column", or "--set section.key" for an override.
    size_t end = location.size();
    for (int part = 0; part < 2; ++part) {
      const size_t colon = location.rfind(':', end - 1);
      if (colon == std::string::npos || colon == 0) break;
      end = colon;
    }
    if (end < location.size()) hide_path(location.substr(0, end), kConfiguration);
  }
  for (const std::string* path :
       {&config.target.model, &config.proposer.model, &config.sampling.grammar_file,
        &config.sampling.json_schema_file, &config.server.chat_template_file})
    hide_path(*path, kFile);
  for (const std::string& folder : config.plugins.paths) hide_path(folder, kPluginFolder);
  for (const std::string& folder : plugin_folders) hide_path(folder, kPluginFolder);
  // A plugin's string parameter is hidden when it names a file or folder that exists.
  for (const auto* params :
       {&config.proposer.params, &config.acceptance.params, &config.verifier.params})
    for (const PluginParam& p : *params) {
      std::error_code ec;
      if (names_a_file(p.string_value) && std::filesystem::exists(p.string_value, ec))
        hide(p.string_value, kFile);
    }
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
