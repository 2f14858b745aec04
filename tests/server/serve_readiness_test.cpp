// specd serve's readiness: the port answers while the model loads (503 "model_loading" on
// /health and on the routes that need the model), 200 once loaded; a load that fails ends
// `specd serve` with the error naming the file; a signal during the load ends it at once. In
// process over a loopback port; every wait is bounded.
#include <doctest/doctest.h>
#include <httplib.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "config/config.hpp"
#include "plugin/registry.hpp"
#include "server/http_server.hpp"
#include "shipped_models.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string& kModels = specd::test::kShippedModels;

specd::Config config(const std::string& draft) {
  return specd::parse_config(
      "", "readiness.toml",
      {"engine.backend=\"cpu\"", "engine.threads=1", "target.model=\"" + kModels + "/target.gguf\"",
       "proposer.kind=\"draft-model\"", "proposer.model=\"" + draft + "\"", "proposer.k=3",
       "acceptance.rule=\"rejection\"", "sampling.temperature=0", "sampling.max_tokens=8",
       "server.chat_template=\"chatml\"", "server.port=0"});
}

// The 503 an unready server gives: an OpenAI error body with `code`.
void check_unready(const httplib::Result& res, const std::string& code) {
  REQUIRE_MESSAGE(res, httplib::to_string(res.error()));
  CHECK(res->status == 503);
  json j = json::parse(res->body, nullptr, false);
  REQUIRE_MESSAGE(j.is_object(), res->body);
  CHECK(j["error"]["code"] == code);
  CHECK(j["error"]["type"] == "server_overloaded");
  if (code == "model_loading")
    CHECK(j["error"]["message"].get<std::string>().find("model is loading") != std::string::npos);
}

// /health and a completion both get the 503 with `code`.
void check_health_and_completions_unready(httplib::Client& c, const std::string& code) {
  check_unready(c.Get("/health"), code);
  check_unready(c.Post("/v1/completions", R"({"prompt":"x"})", "application/json"), code);
}

// serve() on a thread, stopped and joined at the end of the scope.
class Serving {
 public:
  explicit Serving(specd::server::HttpServer& http) : http_(http), thread_([&] { http.serve(); }) {}
  ~Serving() {
    http_.stop();
    thread_.join();
  }

 private:
  specd::server::HttpServer& http_;
  std::thread thread_;
};

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(60, 0);
  return c;
}

// A probe's answer: its status and {"status": word}.
void check_probe(httplib::Client& c, const char* path, int status, const char* word) {
  auto res = c.Get(path);
  REQUIRE(res);
  CHECK(res->status == status);
  CHECK(json::parse(res->body)["status"] == word);
}

}  // namespace

TEST_CASE("serve answers 503 model_loading until load() returns, then serves") {
  if (!specd::test::have_shipped_models()) return;
  const specd::Config cfg = config(kModels + "/draft.gguf");
  specd::PluginRegistry registry{std::vector<std::string>{}};
  specd::server::HttpServer http(cfg, registry);
  const int port = http.bind("127.0.0.1", 0);
  REQUIRE(port > 0);
  Serving serving(http);
  httplib::Client c = client(port);

  CHECK_FALSE(http.ready());
  check_unready(c.Get("/health"), "model_loading");
  // Kubernetes' probes: alive while loading, not ready.
  check_probe(c, "/livez", 200, "alive");
  check_probe(c, "/readyz", 503, "loading");
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":4})";
  check_unready(c.Post("/v1/completions", body, "application/json"), "model_loading");
  check_unready(
      c.Post("/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2})", "application/json"),
      "model_loading");
  check_unready(c.Post("/v1/verify", R"({"op":"open"})", "application/json"), "model_loading");
  auto models = c.Get("/v1/models");  // needs nothing loaded
  REQUIRE(models);
  CHECK(models->status == 200);

  http.load();
  CHECK(http.ready());
  auto health = c.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(json::parse(health->body) == json{{"status", "ok"}});
  check_probe(c, "/readyz", 200, "ready");
  auto res = c.Post("/v1/completions", body, "application/json");
  REQUIRE(res);
  CHECK_MESSAGE(res->status == 200, res->body);
  CHECK(json::parse(res->body)["usage"]["completion_tokens"] == 4);
  auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("specd_requests_total{endpoint=\"/health\",status=\"503\"} 1") !=
        std::string::npos);
  // The gateway's series: the pool's shape once a step has run, the tokens counted.
  CHECK(metrics->body.find("vllm:cache_config_info{model_name=\"") != std::string::npos);
  CHECK(metrics->body.find("vllm:generation_tokens_total{model_name=\"") != std::string::npos);
  CHECK(metrics->body.find("vllm:num_requests_waiting{model_name=\"") != std::string::npos);
}

TEST_CASE("a model that fails to load: load() throws naming it, the server stays unready") {
  if (!specd::test::have_shipped_models()) return;
  const fs::path garbage = fs::current_path() / "readiness_garbage.gguf";
  std::ofstream(garbage) << "this is not a GGUF file";
  specd::PluginRegistry registry{std::vector<std::string>{}};
  specd::server::HttpServer http(config(garbage.string()), registry);
  const int port = http.bind("127.0.0.1", 0);
  Serving serving(http);
  std::string error;
  try {
    http.load();
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK_MESSAGE(error.find(garbage.string()) != std::string::npos, error);
  CHECK_FALSE(http.ready());
  httplib::Client c = client(port);
  check_health_and_completions_unready(c, "model_load_failed");
  check_probe(c, "/livez", 200, "alive");
  check_probe(c, "/readyz", 503, "failed");

  // The CLI: it listened, then ends with the error and a non-zero status.
  const fs::path toml = fs::current_path() / "readiness_garbage.toml";
  std::ofstream(toml) << "[engine]\nbackend = \"cpu\"\nthreads = 1\n[target]\nmodel = \"" << kModels
                      << "/target.gguf\"\n[proposer]\nkind = \"draft-model\"\nmodel = \""
                      << garbage.string() << "\"\n[acceptance]\nrule = \"rejection\"\n"
                      << "[server]\nport = 0\nchat_template = \"chatml\"\n";
  specd::test::CliResult r =
      specd::test::run_program({"timeout", "120", SPECD_CLI, "serve", "-c", toml.string()});
  CHECK(r.status != 0);
  CHECK(r.status != 124);  // ended by itself, not by the timeout
  CHECK(r.err.find("listening on http://127.0.0.1:") != std::string::npos);
  CHECK_MESSAGE(r.err.find("specd: error: ") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find(garbage.string()) != std::string::npos, r.err);
  CHECK(r.err.find("ready") == std::string::npos);
}

TEST_CASE("abandon_load: a server given up while loading never becomes ready") {
  if (!specd::test::have_shipped_models()) return;
  specd::PluginRegistry registry{std::vector<std::string>{}};
  specd::server::HttpServer http(config(kModels + "/draft.gguf"), registry);
  const int port = http.bind("127.0.0.1", 0);
  Serving serving(http);
  CHECK(http.abandon_load());
  CHECK_FALSE(http.abandon_load());  // once
  http.load();                       // runs to its end, as a load under way would
  CHECK_FALSE(http.ready());
  httplib::Client c = client(port);
  check_health_and_completions_unready(c, "shutting_down");
  check_probe(c, "/readyz", 503, "draining");

  specd::server::HttpServer loaded(config(kModels + "/draft.gguf"), registry);
  loaded.load();
  CHECK_FALSE(loaded.abandon_load());  // too late: it is ready and stays so
  CHECK(loaded.ready());
}

TEST_CASE("specd serve: SIGTERM while the model loads ends it at once (143)") {
  if (!specd::test::have_shipped_models()) return;
  // k = "auto" makes the load longer (it times the target's passes); the signal goes as soon
  // as the port is open, which is before the load starts.
  const fs::path toml = fs::current_path() / "readiness_signal.toml";
  std::ofstream(toml) << "[engine]\nbackend = \"cpu\"\nthreads = 1\n[target]\nmodel = \"" << kModels
                      << "/target.gguf\"\n[proposer]\nkind = \"draft-model\"\nmodel = \"" << kModels
                      << "/draft.gguf\"\nk = \"auto\"\n[acceptance]\nrule = \"rejection\"\n"
                      << "[server]\nport = 0\nchat_template = \"chatml\"\n";
  for (int attempt = 0; attempt < 3; ++attempt) {
    specd::test::RunningProgram p =
        specd::test::start_program({"timeout", "120", SPECD_CLI, "serve", "-c", toml.string()});
    std::string err;
    char buf[4096];
    while (err.find("listening on") == std::string::npos) {
      const ssize_t n = ::read(p.err, buf, sizeof buf);
      if (n <= 0) break;
      err.append(buf, static_cast<size_t>(n));
    }
    REQUIRE_MESSAGE(err.find("listening on") != std::string::npos, err);
    ::kill(p.pid, SIGTERM);  // `timeout` passes it on to specd
    specd::test::CliResult r = specd::test::finish_program(p);
    r.err = err + r.err;
    if (r.err.find("specd serve: ready") != std::string::npos) {
      // The load won the race (a fast machine): then it drained, and exits 0. Try again.
      CHECK_MESSAGE(r.status == 0, r.err);
      CHECK(r.err.find("draining") != std::string::npos);
      continue;
    }
    CHECK_MESSAGE(r.status == 128 + SIGTERM, r.err);
    CHECK_MESSAGE(
        r.err.find("specd serve: SIGTERM while loading the model: stopped") != std::string::npos,
        r.err);
    CHECK(r.err.find("draining") == std::string::npos);
    return;
  }
  FAIL("the load finished before the signal in three tries: the case was not exercised");
}
