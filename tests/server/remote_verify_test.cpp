// The remote verifier over loopback: `specd serve` as a child process on an ephemeral port
// with the shipped models, drafting engines in this process verifying through it.
//  - greedy output through the remote verifier equals plain decoding, locally and on the
//    server, token for token;
//  - `specd audit -c` on a remote configuration;
//  - errors: server down, no answer (timeout), wrong API key, another vocabulary, unknown
//    kind, and malformed /v1/verify requests (400 naming the field), the session bounds.
// Every wait is bounded; the child is always killed.
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "serve_child.hpp"
#include "shipped_models.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace specd;

namespace {

const std::string& kModels = test::kShippedModels;
const char* kKey = "remote-test-key";
const std::vector<std::string> kPrompts = {"Once upon a time",
                                           "def fibonacci(n):", "The quick brown fox"};

// A TCP socket bound to a free loopback port, which `port` receives.
int bound_loopback_socket(int& port) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return s;
}

// `specd serve` (plain decoding, greedy) as a child process; killed at destruction.
class Server {
 public:
  explicit Server(const std::string& extra = "") {
    static int started = 0;
    const std::string base =
        (fs::current_path() / ("remote_server." + std::to_string(++started))).string();
    config_ = base + ".toml";
    log_ = base + ".log";
    std::ofstream(config_) << "[engine]\nbackend = \"cpu\"\nthreads = 1\n"
                           << "[target]\nmodel = \"" << kModels << "/target.gguf\"\n"
                           << "[sampling]\ntemperature = 0.0\nmax_tokens = 40\n"
                           << "[server]\nport = 0\napi_key = \"" << kKey << "\"\n"
                           << extra;
    fs::remove(log_);
    pid_ = test::spawn_with_log(SPECD_CLI, {"serve", "-c", config_}, log_);
    port_ = test::wait_until_serving(log_, pid_);
    REQUIRE_MESSAGE(port_ > 0, "specd serve did not start: " << test::read_text(log_));
  }
  ~Server() { test::kill_child(pid_); }
  int port() const { return port_; }
  void kill_now() { test::kill_child(pid_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string config_, log_;
};

// A drafting configuration verified by `url`.
std::string client_toml(const std::string& url, const std::string& proposer, double temperature = 0,
                        const std::string& key = kKey,
                        const std::string& target = kModels + "/target.gguf") {
  std::ostringstream t;
  t << "[engine]\nbackend = \"cpu\"\nthreads = 1\nseed = 3\n"
    << "[target]\nmodel = \"" << target << "\"\n";
  if (proposer == "draft-model")
    t << "[proposer]\nkind = \"draft-model\"\nmodel = \"" << kModels
      << "/draft.gguf\"\nk = 3\n[acceptance]\nrule = \"rejection\"\n";
  else if (proposer == "ngram")
    t << "[proposer]\nkind = \"ngram\"\nk = 4\n";
  if (!url.empty())
    t << "[verifier]\nkind = \"remote\"\nurl = \"" << url << "\"\napi_key = \"" << key
      << "\"\ntimeout_s = 60\nconnect_timeout_s = 5\n";
  t << "[sampling]\ntemperature = " << temperature << "\nmax_tokens = 40\n";
  return t.str();
}

Config client_config(const std::string& toml) {
  return parse_config(toml, "client.toml");
}

PluginRegistry& registry() {
  static PluginRegistry r({std::string(SPECD_BINARY_DIR) + "/bin/plugins"}, false);
  return r;
}

httplib::Client http(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(60, 0);
  c.set_write_timeout(30, 0);
  c.set_bearer_token_auth(kKey);
  return c;
}

json post(httplib::Client& c, const json& body, int expect) {
  auto res = c.Post("/v1/verify", body.dump(), "application/json");
  REQUIRE_MESSAGE(res, "POST /v1/verify: " << httplib::to_string(res.error()));
  CHECK_MESSAGE(res->status == expect, body.dump() << " -> " << res->body);
  json j = json::parse(res->body, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), res->body);
  return j;
}

// The `param` of an error answer.
std::string param_of(const json& error) {
  return error.contains("error") ? error["error"].value("param", std::string()) : "";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("greedy through the remote verifier equals plain decoding, locally and on the server") {
  if (!test::have_shipped_models()) return;
  Server server;
  Engine local_plain(client_config(client_toml("", "none")), registry());
  Engine remote_plain(client_config(client_toml(server.url(), "none")), registry());
  Engine remote_draft(client_config(client_toml(server.url(), "draft-model")), registry());
  Engine remote_ngram(client_config(client_toml(server.url(), "ngram")), registry());
  auto c = http(server.port());
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult plain = local_plain.generate(prompt);
    REQUIRE(plain.tokens.size() > 10);
    CHECK(remote_plain.generate(prompt).tokens == plain.tokens);
    const GenerationResult draft = remote_draft.generate(prompt);
    CHECK(draft.tokens == plain.tokens);
    CHECK(draft.stats.drafted > 0);
    CHECK(remote_ngram.generate(prompt).tokens == plain.tokens);
    // And the server's own plain decoding of the same prompt.
    auto res = c.Post("/v1/completions",
                      json{{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}}.dump(),
                      "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 200, res->body);
    CHECK(json::parse(res->body)["choices"][0]["text"].get<std::string>() == draft.text);
  }
  // A second generation on the same engine starts a fresh sequence on the same session.
  CHECK(remote_draft.generate(kPrompts[0]).tokens == local_plain.generate(kPrompts[0]).tokens);
}

TEST_CASE("specd audit -c passes on a remote configuration") {
  if (!test::have_shipped_models()) return;
  Server server;
  const fs::path path = fs::current_path() / "remote_audit.toml";
  std::ofstream(path) << client_toml(server.url(), "draft-model", 1.0);
  const test::CliResult r = test::run_program(
      {SPECD_CLI, "audit", "-c", path.string(), "--samples", "600", "--tokens", "1"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("verdict: lossless") != std::string::npos);
}

TEST_CASE("remote verifier errors are clear and name the URL or the key") {
  if (!test::have_shipped_models()) return;
  SUBCASE("server down") {
    // A port that was just free: nothing listens there.
    int port = 0;
    close(bound_loopback_socket(port));
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string e = error_of(
        [&] { Engine engine(client_config(client_toml(url, "draft-model")), registry()); });
    CHECK(e.find(url + "/v1/verify") != std::string::npos);
    CHECK(e.find("could not connect (is `specd serve` running there?") != std::string::npos);
  }
  SUBCASE("no answer within timeout_s") {
    // Listens (the kernel completes connections) but never answers.
    int port = 0;
    const int s = bound_loopback_socket(port);
    REQUIRE(listen(s, 4) == 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    std::string toml = client_toml(url, "none");
    toml.replace(toml.find("timeout_s = 60"), 14, "timeout_s = 1");
    const std::string e = error_of([&] { Engine engine(client_config(toml), registry()); });
    close(s);
    CHECK(e.find(url + "/v1/verify") != std::string::npos);
    CHECK(e.find("no complete answer within timeout_s = 1 s") != std::string::npos);
  }
  SUBCASE("unknown kind, missing url") {
    std::string toml = client_toml("http://127.0.0.1:1", "none");
    toml.replace(toml.find("kind = \"remote\""), 15, "kind = \"remot\"");
    std::string e = error_of([&] { Engine engine(client_config(toml), registry()); });
    CHECK(e.find("client.toml:") != std::string::npos);
    CHECK(e.find("unknown verifier 'remot' (did you mean 'remote'?)") != std::string::npos);
    e = error_of([&] {
      Engine engine(client_config("[target]\nmodel = \"" + kModels +
                                  "/target.gguf\"\n[verifier]\nkind = \"remote\"\n"),
                    registry());
    });
    CHECK(e.find("key 'url' is required") != std::string::npos);
    CHECK(e.find("client.toml:") != std::string::npos);
    e = error_of([] { client_config("[verifier]\nurl = \"http://x\"\n"); });
    CHECK(e.find("client.toml:2:7: unknown key 'url' in [verifier]") != std::string::npos);
  }
  Server server;
  SUBCASE("the server goes away between generations") {
    Engine engine(client_config(client_toml(server.url(), "draft-model")), registry());
    CHECK(engine.generate(kPrompts[0]).tokens.size() > 10);
    server.kill_now();
    const std::string e = error_of([&] { engine.generate(kPrompts[1]); });
    CHECK(e.find(server.url() + "/v1/verify") != std::string::npos);
    CHECK(e.find("verifier 'remote'") != std::string::npos);
  }
  SUBCASE("wrong API key") {
    const std::string e = error_of([&] {
      Engine engine(client_config(client_toml(server.url(), "none", 0, "not-the-key")), registry());
    });
    CHECK(e.find(server.url() + "/v1/verify: HTTP 401") != std::string::npos);
    CHECK(e.find("api_key") != std::string::npos);
  }
  SUBCASE("another vocabulary") {
    const std::string other = test::temp_dir("remote_vocab") + "/other.gguf";
    test::RandomLlamaSpec spec;
    test::write_random_llama(other, spec);
    const std::string e = error_of([&] {
      Engine engine(client_config(client_toml(server.url(), "none", 0, kKey, other)), registry());
    });
    CHECK(e.find("verifier 'remote'") != std::string::npos);
    CHECK(e.find("must share a vocabulary") != std::string::npos);
    CHECK(e.find(other) != std::string::npos);
  }
}

TEST_CASE("POST /v1/verify refuses malformed requests naming the field; sessions are bounded") {
  if (!test::have_shipped_models()) return;
  Server server("verify_sessions = 2\n");
  auto c = http(server.port());
  const json opened = post(c, {{"op", "open"}}, 200);
  const std::string id = opened["session"];
  CHECK(opened["vocab_size"] == 4096);
  CHECK(opened["vocab_digest"].get<std::string>().size() == 16);
  const json tree = {{"tokens", {5, 6}}, {"parents", {0, 1}}};
  auto with = [&](json body) {
    body["session"] = id;
    return body;
  };
  // Before any sequence: reset is needed.
  CHECK(param_of(post(c, with({{"delta", json::array()}, {"root", 1}, {"tree", tree}}), 400)) ==
        "reset");
  CHECK(param_of(post(c, with({{"reset", true}, {"root", 1}, {"tree", tree}}), 400)) == "delta");
  CHECK(param_of(post(c, with({{"reset", true}, {"delta", {1, 2}}, {"tree", tree}}), 400)) ==
        "root");
  CHECK(param_of(post(
            c, with({{"reset", true}, {"delta", {1, 99999}}, {"root", 1}, {"tree", tree}}), 400)) ==
        "delta");
  CHECK(param_of(post(c,
                      with({{"reset", true},
                            {"delta", {1}},
                            {"root", 1},
                            {"tree", {{"tokens", {5, 6}}, {"parents", {0, 2}}}}}),
                      400)) == "tree.parents");
  CHECK(param_of(post(c,
                      with({{"reset", true},
                            {"delta", {1}},
                            {"root", 1},
                            {"tree", {{"tokens", {5, -1}}, {"parents", {0, 1}}}}}),
                      400)) == "tree.tokens");
  CHECK(param_of(post(c, with({{"reset", true}, {"delta", {1}}, {"root", 1}, {"tree", 3}}), 400)) ==
        "tree");
  CHECK(param_of(post(c, {{"op", "frobnicate"}}, 400)) == "op");
  {
    // 2^63 is shown as sent, not wrapped to a negative number.
    const json huge = post(
        c,
        with({{"reset", true}, {"delta", {json(uint64_t{1} << 63)}}, {"root", 1}, {"tree", tree}}),
        400);
    CHECK(param_of(huge) == "delta");
    CHECK(huge["error"]["message"].get<std::string>().find("= 9223372036854775808 is outside") !=
          std::string::npos);
    const json huge_root = post(
        c, with({{"reset", true}, {"delta", {1}}, {"root", json(~uint64_t{0})}, {"tree", tree}}),
        400);
    CHECK(huge_root["error"]["message"].get<std::string>().find("18446744073709551615") !=
          std::string::npos);
  }
  {
    // More nodes than the server verifies batch-invariantly in one pass.
    const size_t too_many = opened["max_nodes"].get<size_t>() + 1;
    json parents = json::array();
    for (size_t i = 0; i < too_many; ++i) parents.push_back(i);
    const json big = {{"tokens", std::vector<int>(too_many, 5)}, {"parents", parents}};
    CHECK(param_of(post(c, with({{"reset", true}, {"delta", {1}}, {"root", 1}, {"tree", big}}),
                        400)) == "tree.tokens");
  }
  CHECK(param_of(post(c, {{"delta", json::array()}, {"root", 1}, {"tree", tree}}, 400)) ==
        "session");
  CHECK(
      param_of(post(c, {{"session", "nope"}, {"delta", json::array()}, {"root", 1}, {"tree", tree}},
                    404)) == "session");
  {
    auto res = c.Post("/v1/verify", "{not json", "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
  }
  // A good round, then commits that do not fit the last tree.
  const json round =
      post(c, with({{"reset", true}, {"delta", {1, 2}}, {"root", 3}, {"tree", tree}}), 200);
  CHECK(round["rows"] == 3);
  CHECK(round["committed"] == 2);
  CHECK(round["encoding"] == "f32le-base64");
  CHECK(round["logits"].get<std::string>().size() == (3 * 4096 * 4 + 2) / 3 * 4);
  CHECK(param_of(post(c, with({{"delta", {3, 6}}, {"commit", {2}}, {"root", 7}, {"tree", tree}}),
                      400)) == "commit");
  // (a failed request leaves the session needing a reset)
  post(c, with({{"reset", true}, {"delta", {1, 2}}, {"root", 3}, {"tree", tree}}), 200);
  CHECK(param_of(post(c, with({{"delta", {3, 9}}, {"commit", {1}}, {"root", 7}, {"tree", tree}}),
                      400)) == "delta");
  post(c, with({{"reset", true}, {"delta", {1, 2}}, {"root", 3}, {"tree", tree}}), 200);
  CHECK(post(c, with({{"delta", {3, 5}}, {"commit", {1}}, {"root", 7}, {"tree", tree}}),
             200)["committed"] == 4);
  // Bounded: two sessions at most; closing frees one.
  const json second = post(c, {{"op", "open"}}, 200);
  post(c, {{"op", "open"}}, 503);
  CHECK(post(c, {{"op", "close"}, {"session", second["session"]}}, 200)["closed"] == true);
  const json third = post(c, {{"op", "open"}}, 200);
  CHECK(third["session"] != second["session"]);
}

TEST_CASE("verify sessions count in the KV budget: refused when full, completions wait for them") {
  if (!test::have_shipped_models()) return;
  // kv_budget 256 rows: one session (its context is kv_budget) holds all of it. It is not
  // idle long enough to yield its rows here.
  Server server("kv_budget = 256\nverify_sessions = 4\nverify_yield_s = 600\n");
  auto c = http(server.port());
  const json opened = post(c, {{"op", "open"}}, 200);
  CHECK(opened["context_length"] == 256);
  const std::string first = opened["session"];
  const json full = post(c, {{"op", "open"}}, 503);
  CHECK(full["error"]["code"] == "kv_budget_full");
  const std::string message = full["error"]["message"];
  CHECK_MESSAGE(message.find("needs 256 rows") != std::string::npos, message);
  CHECK_MESSAGE(message.find("kv_budget") != std::string::npos, message);
  CHECK_MESSAGE(message.find("0 of 256 free") != std::string::npos, message);

  // A completion waits while the session holds the budget (bounded wait on the queue gauge),
  // then runs once it is closed.
  int status = -1;
  std::string body;
  std::thread completion([&] {
    auto cc = http(server.port());
    auto res = cc.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":8})",
                       "application/json");
    if (res) {
      status = res->status;
      body = res->body;
    }
  });
  CHECK(test::metrics_show(c, "specd_queue_depth 1"));
  CHECK(post(c, {{"op", "close"}, {"session", first}}, 200)["closed"] == true);
  completion.join();
  CHECK_MESSAGE(status == 200, body);
  // The completion's rows are back: a session fits again.
  post(c, {{"op", "open"}}, 200);
}

TEST_CASE("idle verify sessions yield their rows to a waiting completion") {
  if (!test::have_shipped_models()) return;
  // A session holds the whole budget (its context is kv_budget) and goes idle: a completion
  // does not wait for verify_idle_s (300 s) but about verify_yield_s, and the session is gone.
  Server server("kv_budget = 256\nverify_sessions = 4\nverify_yield_s = 1\n");
  auto c = http(server.port());
  const std::vector<std::string> ids = {post(c, {{"op", "open"}}, 200)["session"]};
  post(c, {{"op", "open"}}, 503);
  const auto t0 = std::chrono::steady_clock::now();
  auto res = c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":8})",
                    "application/json");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(res);
  CHECK_MESSAGE(res->status == 200, res->body);
  CHECK(waited < 60);
  const json tree = {{"tokens", json::array()}, {"parents", json::array()}};
  CHECK(param_of(post(
            c, {{"session", ids[0]}, {"reset", true}, {"delta", {1}}, {"root", 2}, {"tree", tree}},
            404)) == "session");
}

TEST_CASE("a completion kept out by verify sessions in use gets 503 after kv_wait_s") {
  if (!test::have_shipped_models()) return;
  Server server("kv_budget = 256\nverify_sessions = 4\nverify_yield_s = 600\nkv_wait_s = 1\n");
  auto c = http(server.port());
  post(c, {{"op", "open"}}, 200);
  auto res = c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":8})",
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 503);
  const json error = json::parse(res->body)["error"];
  CHECK(error["code"] == "kv_budget_full");
  CHECK_MESSAGE(std::string(error["message"]).find("kv_wait_s") != std::string::npos, res->body);
}

TEST_CASE("an idle verify session is freed") {
  if (!test::have_shipped_models()) return;
  Server server("verify_sessions = 1\nverify_idle_s = 1\n");
  auto c = http(server.port());
  const std::string id = post(c, {{"op", "open"}}, 200)["session"];
  post(c, {{"op", "open"}}, 503);
  // Unused for twice the idle time: freed at the next request, which may open another.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  post(c, {{"op", "open"}}, 200);
  const json tree = {{"tokens", json::array()}, {"parents", json::array()}};
  CHECK(param_of(
            post(c, {{"session", id}, {"reset", true}, {"delta", {1}}, {"root", 2}, {"tree", tree}},
                 404)) == "session");
}

TEST_CASE("a drafter whose session the server freed opens another and goes on") {
  if (!test::have_shipped_models()) return;
  Server server("verify_idle_s = 1\n");
  Engine local_plain(client_config(client_toml("", "none")), registry());
  Engine remote_draft(client_config(client_toml(server.url(), "draft-model")), registry());
  CHECK(remote_draft.generate(kPrompts[0]).tokens == local_plain.generate(kPrompts[0]).tokens);
  // Idle for twice verify_idle_s: the server frees the session at the next request.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  CHECK(remote_draft.generate(kPrompts[1]).tokens == local_plain.generate(kPrompts[1]).tokens);
}
