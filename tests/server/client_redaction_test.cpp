// Error answers never show a client the server's files: its configuration (with line and
// column), models and plugin folders are replaced by neutral names.
#include <doctest/doctest.h>

#include <string>

#include "config/config.hpp"
#include "server/client_redaction.hpp"
#include "server/responses.hpp"
#include "test_paths.hpp"

using specd::server::redact_for_client;

TEST_CASE("the configuration's file, its lines and the files it names are hidden") {
  specd::Config c;
  c.path = "/srv/specd/site/server.toml";
  c.locations["acceptance.rule"] = "/srv/specd/site/server.toml:12:1";
  c.locations["proposer.k"] = "--set proposer.k";
  c.target.model = "/srv/models/qwen3-8b-q4_k_m.gguf";
  c.proposer.model = "/srv/models/qwen3-0.6b.gguf";
  c.plugins.paths = {"/opt/vendor/plugins"};
  // A plugin parameter is hidden when it names a file that exists: this test's own source.
  specd::PluginParam head;
  head.key = "heads";
  head.string_value = SPECD_SOURCE_DIR + "/tests/server/client_redaction_test.cpp";
  c.proposer.params.push_back(head);
  specd::PluginParam pattern;  // not a file: a value like this stays visible
  pattern.key = "pattern";
  pattern.string_value = "a/b";
  c.proposer.params.push_back(pattern);
  specd::server::hide_from_clients(c, {"/usr/lib/specd/plugins", "./"});

  CHECK(redact_for_client("/srv/specd/site/server.toml:12:1: rule 'rejection' needs q") ==
        "the server's configuration: rule 'rejection' needs q");
  CHECK(redact_for_client("cannot read /srv/models/qwen3-0.6b.gguf: vocabulary differs from "
                          "/srv/models/qwen3-8b-q4_k_m.gguf") ==
        "cannot read a server file: vocabulary differs from a server file");
  CHECK(redact_for_client("no plugin in /opt/vendor/plugins/x.so") ==
        "no plugin in a plugin folder/x.so");
  CHECK(redact_for_client("/usr/lib/specd/plugins/specd-backend-cuda.so: cannot open") ==
        "a plugin folder/specd-backend-cuda.so: cannot open");
  CHECK(redact_for_client(std::string("head file ") + SPECD_SOURCE_DIR +
                          "/tests/server/client_redaction_test.cpp:3") ==
        "head file a server file");
  // Text without hidden paths is left alone, slashes and colons included; "./" and a
  // parameter that names no file hide nothing.
  CHECK(redact_for_client("k = 3/4 of 'max_tokens': 12:30, a/b ./x") ==
        "k = 3/4 of 'max_tokens': 12:30, a/b ./x");
  // A configuration given by a bare name is hidden with its line and column.
  specd::Config bare;
  bare.path = "site.toml";
  specd::server::hide_from_clients(bare);
  CHECK(redact_for_client("site.toml:4:2: refused") == "the server's configuration: refused");
  // The answer a client gets goes through it.
  const std::string body = specd::server::error_json("/srv/specd/site/server.toml:12:1: refused",
                                                     "invalid_request_error", "", "");
  CHECK(body.find("/srv/") == std::string::npos);
  CHECK(body.find("the server's configuration: refused") != std::string::npos);
}
