// Error answers never show a client the server's files: its configuration (with line and
// column), models and plugin folders are replaced by neutral names.
#include <doctest/doctest.h>

#include <string>

#include "config/config.hpp"
#include "server/client_redaction.hpp"
#include "server/responses.hpp"

using specd::server::redact_for_client;

TEST_CASE("the configuration's file, its lines and the files it names are hidden") {
  specd::Config c;
  c.path = "/srv/specd/site/server.toml";
  c.locations["acceptance.rule"] = "/srv/specd/site/server.toml:12:1";
  c.locations["proposer.k"] = "--set proposer.k";
  c.target.model = "/srv/models/qwen3-8b-q4_k_m.gguf";
  c.proposer.model = "/srv/models/qwen3-0.6b.gguf";
  c.plugins.paths = {"/opt/vendor/plugins"};
  specd::PluginParam head;
  head.key = "heads";
  head.string_value = "/srv/models/heads.gguf";
  c.proposer.params.push_back(head);
  specd::server::hide_from_clients(c);

  CHECK(redact_for_client("/srv/specd/site/server.toml:12:1: rule 'rejection' needs q") ==
        "the server's configuration: rule 'rejection' needs q");
  CHECK(redact_for_client("cannot read /srv/models/qwen3-0.6b.gguf: vocabulary differs from "
                          "/srv/models/qwen3-8b-q4_k_m.gguf") ==
        "cannot read a server file: vocabulary differs from a server file");
  CHECK(redact_for_client("no plugin in /opt/vendor/plugins/x.so") ==
        "no plugin in a server file/x.so");
  CHECK(redact_for_client("head file /srv/models/heads.gguf:3") == "head file a server file");
  // Text without hidden paths is left alone, slashes and colons included.
  CHECK(redact_for_client("k = 3/4 of 'max_tokens': 12:30") == "k = 3/4 of 'max_tokens': 12:30");
  // The answer a client gets goes through it.
  const std::string body = specd::server::error_json("/srv/specd/site/server.toml:12:1: refused",
                                                     "invalid_request_error", "", "");
  CHECK(body.find("/srv/") == std::string::npos);
  CHECK(body.find("the server's configuration: refused") != std::string::npos);
}
