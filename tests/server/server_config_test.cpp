// The [server] section: defaults, every key read, problems located as file:line:col.
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "config/config.hpp"
#include "server/server_checks.hpp"

namespace {

std::string problems(const std::string& toml) {
  try {
    specd::parse_config(toml, "serve.toml");
  } catch (const specd::UsageError& e) {
    return e.what();
  }
  return "";
}

// What `check` refuses in a config of `server_section` under [server] ("" when it passes).
std::string check_refusal(void (*check)(const specd::Config&), const std::string& server_section) {
  try {
    check(specd::parse_config("[server]\n" + server_section, "serve.toml"));
  } catch (const specd::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("[server] defaults bind loopback") {
  specd::Config c = specd::parse_config("", "serve.toml");
  CHECK(c.server.host == "127.0.0.1");
  CHECK(c.server.port == 8080);
  CHECK(c.server.max_sequences == 16);
  CHECK(c.server.api_key.empty());
  CHECK(c.server.queue_limit == 16);
  CHECK(c.server.drain_timeout_s == 30.0);
  CHECK(c.server.max_prefill_rows == 0);
  CHECK_FALSE(c.server.allow_public_without_key);
}

TEST_CASE("[server] keys are read") {
  specd::Config c = specd::parse_config(
      "[server]\nhost = \"0.0.0.0\"\nport = 9000\nmax_sequences = 1\nqueue_limit = 3\n"
      "kv_budget = 512\nmax_body_bytes = 4096\napi_key = \"k\"\nmodel_name = \"m\"\n"
      "chat_template = \"gemma\"\nmax_engines = 4\nmax_prefill_rows = 64\n",
      "serve.toml");
  CHECK(c.server.max_prefill_rows == 64);
  CHECK(c.server.host == "0.0.0.0");
  CHECK(c.server.port == 9000);
  CHECK(c.server.queue_limit == 3);
  CHECK(c.server.kv_budget == 512);
  CHECK(c.server.max_body_bytes == 4096);
  CHECK(c.server.api_key == "k");
  CHECK(c.server.model_name == "m");
  CHECK(c.server.chat_template == "gemma");
  CHECK(c.server.max_engines == 4);
  CHECK(specd::parse_config("", "x", {"server.port=0"}).server.port == 0);
  specd::Config d = specd::parse_config(
      "[server]\ndrain_timeout_s = 2.5\nallow_public_without_key = true\n", "serve.toml");
  CHECK(d.server.drain_timeout_s == 2.5);
  CHECK(d.server.allow_public_without_key);
}

TEST_CASE("[server] problems name file, line and column") {
  CHECK(problems("[server]\nport = 70000\n") ==
        "serve.toml:2:8: 'port' = 70000 is out of range (0 = any free port, up to 65535)");
  CHECK(problems("[server]\nport = \"80\"\n") ==
        "serve.toml:2:8: 'port' must be an integer, not a string");
  CHECK(problems("[server]\nmax_sequences = 0\n").find("serve.toml:2:17: 'max_sequences'") == 0);
  CHECK(problems("[server]\nmax_sequences = 257\n").find("serve.toml:2:17: 'max_sequences'") == 0);
  CHECK(problems("[server]\nhost = \"\"\n") == "serve.toml:2:8: 'host' must not be empty");
  CHECK(problems("[server]\napi_key = 5\n") ==
        "serve.toml:2:11: 'api_key' must be a string, not an integer");
  CHECK(problems("[server]\nmax_engines = 0\n").find("serve.toml:2:15:") == 0);
  // The HTTP thread pool is sized from queue_limit: it is bounded so the pool stays sane.
  CHECK(problems("[server]\nqueue_limit = 65536\n") ==
        "serve.toml:2:15: 'queue_limit' = 65536 is out of range (0 to 1024: each waiting "
        "request holds one of the server's HTTP threads)");
  CHECK(problems("[server]\ndrain_timeout_s = -1\n") ==
        "serve.toml:2:19: 'drain_timeout_s' = -1 is out of range (0 to 3600 seconds)");
  CHECK(problems("[server]\nallow_public_without_key = 1\n") ==
        "serve.toml:2:28: 'allow_public_without_key' must be true or false, not an integer");
  CHECK(problems("[server]\nmax_prefill_rows = -1\n") ==
        "serve.toml:2:20: 'max_prefill_rows' = -1 is out of range (0 = no limit, up to 1048576)");
  CHECK(problems("[server]\nmax_prefill_rows = \"auto\"\n") ==
        "serve.toml:2:20: 'max_prefill_rows' must be an integer, not a string");
  CHECK(problems("[server]\nqueue_limt = 2\n") ==
        "serve.toml:2:1: unknown key 'queue_limt' in [server] (did you mean 'queue_limit'?)");
}

TEST_CASE("[server] host and key: what no request could use is refused before serving") {
  auto host_problem = [](const std::string& server_section) {
    return check_refusal(specd::server::check_server_host, server_section);
  };
  CHECK(host_problem("") == "");
  CHECK(host_problem("api_key = \"k-1\"\n") == "");
  CHECK(host_problem("host = \"0.0.0.0\"\napi_key = \"k\"\n") == "");
  CHECK(host_problem("host = \"0.0.0.0\"\nallow_public_without_key = true\n") == "");
  CHECK(host_problem("host = \"0.0.0.0\"\n")
            .find("serve.toml:2:8: host '0.0.0.0' is not a "
                  "loopback address") == 0);
  CHECK(host_problem("api_key = \" \"\n").find("serve.toml:2:11: the key holds spaces") == 0);
  CHECK(host_problem("api_key = \"a\\nb\"\n").find("serve.toml:2:11:") == 0);
  CHECK(host_problem("host = \"a b\"\n").find("serve.toml:2:8: host 'a b'") == 0);
  CHECK(specd::server::is_loopback_host("127.8.0.1"));
  CHECK(specd::server::is_loopback_host("::1"));
  CHECK_FALSE(specd::server::is_loopback_host("128.0.0.1"));
}

TEST_CASE("[server] a max_n written above queue_limit is refused before serving") {
  auto limits_problem = [](const std::string& server_section) {
    return check_refusal(specd::server::check_server_limits, server_section);
  };
  CHECK(limits_problem("max_n = 16\nqueue_limit = 16\n") == "");
  CHECK(limits_problem("queue_limit = 4\n") == "");  // the default max_n: the queue decides
  CHECK(limits_problem("queue_limit = 0\nmax_n = 4\n") == "");  // no queue at all
  CHECK(limits_problem("queue_limit = 8\nmax_n = 64\n")
            .find("serve.toml:3:9: max_n = 64 is more than queue_limit = 8") == 0);
}
