// What the server knows about its own files never reaches a client. Messages built from the
// configuration name its file, line and column, model files and plugin folders; the server's
// log keeps them, while every error answer (responses.hpp's error_json) passes through
// redact_for_client, which puts a neutral name in their place.
#pragma once

#include <string>

#include "config/config.hpp"

namespace specd::server {

// Adds the configuration's file and the paths it names (models, grammar and schema files,
// chat template file, plugin folders, path-like plugin parameters) to the process-wide set
// of hidden paths. Hidden paths are only ever added, so servers sharing a process hide the
// union. Thread-safe.
void hide_from_clients(const Config& config);

// `message` with each hidden path (and the ":line:column" after it) replaced: the
// configuration file by "the server's configuration", any other path by "a server file".
// Thread-safe.
std::string redact_for_client(std::string message);

}  // namespace specd::server
