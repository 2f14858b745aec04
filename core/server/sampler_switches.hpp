// llama-server's sampler switches (mirostat, DRY, XTC, typical_p, dynamic temperature, ...)
// that its clients send with every request, set to "off" by default. At their off value
// they change nothing and are accepted; a value that turns one on asks for a sampler specd
// does not have and is refused by name. A setting that acts only through its switch
// (mirostat_tau, dry_base, ...) is inert while the switch is off.
//
// Thread rule: pure functions.
#pragma once

#include <nlohmann/json.hpp>

namespace specd::server {

// Removes the switches and their settings from a request body (an object), refusing
// (RequestError 400, naming the field) a switch that is on.
void drop_switches_left_off(nlohmann::json& body);

}  // namespace specd::server
