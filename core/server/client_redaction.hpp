// What the server knows about its own files never reaches a client. Messages built from the
// configuration name its file, line and column, model files and plugin folders; the server's
// log keeps them, while every error answer (responses.hpp's error_json) passes through
// redact_for_client, which puts a neutral name in their place.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace specd::server {

// Adds the configuration's file and the paths it names (models, grammar and schema files,
// chat template file, plugin folders, plugin parameters that name an existing file) and
// `plugin_folders` (the registry's search path: a refused plugin's message names its file)
// to the process-wide set of hidden paths. Only paths with a folder in them are hidden
// (the configuration's file also by a bare name), so that no word of other text is. Hidden
// paths are only ever added, so servers sharing a process hide the union. Thread-safe.
void hide_from_clients(const Config& config, const std::vector<std::string>& plugin_folders = {});

// `message` with each hidden path (and the ":line:column" after it) replaced: the
// configuration file by "the server's configuration", a plugin folder by "a plugin folder",
// any other path by "a server file". Thread-safe.
std::string redact_for_client(std::string message);

}  // namespace specd::server
