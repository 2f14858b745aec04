// specd serve end to end: the real binary on an ephemeral loopback port with the shipped
// models, driven over HTTP. Every wait is bounded; the child is always killed.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.hpp"
#include "serve_child.hpp"
#include "shipped_models.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string& kModels = specd::test::kShippedModels;
const std::string kPrompt = "Once upon a time";
const char* kKey = "test-key-123";

// A configuration like configs/default.toml with absolute model paths and a [server] part.
std::string write_config(const std::string& name, const std::string& server_section) {
  fs::path path = fs::current_path() / name;
  std::ofstream out(path);
  out << "[engine]\nbackend = \"cpu\"\nthreads = 1\nseed = 1\n"
      << "[target]\nmodel = \"" << kModels << "/target.gguf\"\n"
      << "[proposer]\nkind = \"draft-model\"\nmodel = \"" << kModels << "/draft.gguf\"\nk = 3\n"
      << "[acceptance]\nrule = \"rejection\"\n"
      << "[sampling]\ntemperature = 0.0\nmax_tokens = 24\n"
      << "[server]\nport = 0\n"
      << server_section;
  return path.string();
}

// `serve -c config`, then each of `set` as a --set override.
std::vector<std::string> serve_arguments(const std::string& config,
                                         const std::vector<std::string>& set) {
  std::vector<std::string> args = {"serve", "-c", config};
  for (const std::string& o : set) args.insert(args.end(), {"--set", o});
  return args;
}

// `specd serve` as a child process; killed at destruction if still running.
class ServerProcess {
 public:
  // `set`: --set overrides, passed as they are (a value that is not TOML arrives as bytes);
  // `env`: NAME=VALUE settings of the server's environment alone.
  explicit ServerProcess(const std::string& config, const std::vector<std::string>& set = {},
                         const std::vector<std::string>& env = {}) {
    static int started = 0;
    log_ = config + "." + std::to_string(++started) + ".log";
    fs::remove(log_);  // never read a previous server's port
    pid_ = specd::test::spawn_with_log(SPECD_CLI, serve_arguments(config, set), log_, env);
    port_ = specd::test::wait_until_serving(log_, pid_);
  }
  ~ServerProcess() { specd::test::kill_child(pid_); }
  int port() const { return port_; }
  std::string log() const { return specd::test::read_text(log_); }

  // SIGTERM, then the exit status (waits at most 60 s, then kills: -1).
  int terminate() {
    kill(pid_, SIGTERM);
    return wait_exit();
  }
  int wait_exit() {
    for (int i = 0; i < 1200; ++i) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  void signal(int sig) { kill(pid_, sig); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(120, 0);
  c.set_write_timeout(30, 0);
  return c;
}

httplib::Headers auth() {
  return {{"Authorization", std::string("Bearer ") + kKey}};
}

// A streamed completion of `max_tokens` that sends `sig` to the server at its first chunk;
// returns the stream as received.
// `after`: called once with the next chunk after the signal (the request still in flight).
std::string stream_signalled(ServerProcess& server, int max_tokens, int sig,
                             const std::function<void()>& after = {}) {
  httplib::Client c = client(server.port());
  json body = {{"prompt", kPrompt}, {"max_tokens", max_tokens}, {"stream", true}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = auth();  // a server without api_key ignores it
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  std::string received;
  bool signalled = false;
  bool after_called = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    if (signalled && after && !after_called) {
      after_called = true;
      after();
    }
    if (!signalled) server.signal(sig);
    signalled = true;
    return true;
  };
  c.send(req);
  return received;
}

// The server's specd_prefix_hit_rows_total.
double prefix_hit_rows(httplib::Client& c) {
  auto res = c.Get("/metrics", auth());
  REQUIRE(res);
  const std::string name = "\nspecd_prefix_hit_rows_total ";
  REQUIRE_MESSAGE(res->body.find(name) != std::string::npos, res->body);
  return std::stod(res->body.substr(res->body.find(name) + name.size()));
}

// What an answer says, whoever produced it: per choice, its text (concatenated over a
// stream's events), finish reason or stop type, tool calls, logprobs and token ids; without
// ids, times, usage and speculation counts.
json answer_digest(const std::string& body) {
  json out = json::object();
  auto add = [&out](const json& e) {
    const std::string index = std::to_string(e.value("index", 0));
    json& d = out[index];
    if (!d.is_object()) d = json::object();
    for (const char* key : {"text", "content"})
      if (e.contains(key) && e[key].is_string())
        d["text"] = d.value("text", std::string()) + e[key].get<std::string>();
    for (const char* part : {"message", "delta"})
      if (e.contains(part) && e[part].is_object()) {
        const json& m = e[part];
        if (m.contains("content") && m["content"].is_string())
          d["text"] = d.value("text", std::string()) + m["content"].get<std::string>();
        if (m.contains("tool_calls")) d["tool_calls"].push_back(m["tool_calls"]);
      }
    for (const char* key : {"finish_reason", "stop_type", "stopping_word", "tokens"})
      if (e.contains(key) && !e[key].is_null() && !(e[key].is_array() && e[key].empty()))
        d[key] = e[key];
    if (e.contains("logprobs") && !e["logprobs"].is_null()) d["logprobs"].push_back(e["logprobs"]);
  };
  auto add_all = [&add](const json& j) {
    if (j.contains("choices"))
      for (const json& c : j["choices"]) add(c);
    else if (!j.contains("usage"))
      add(j);  // llama-server's shape (a usage-only chunk adds nothing)
  };
  if (body.rfind("data: ", 0) != 0) {
    const json j = json::parse(body);
    if (j.is_array())
      for (const json& e : j) add_all(e);
    else
      add_all(j);
    return out;
  }
  for (size_t at = body.find("data: "); at != std::string::npos; at = body.find("data: ", at + 1)) {
    const std::string event = body.substr(at + 6, body.find("\n\n", at) - at - 6);
    if (event != "[DONE]") add_all(json::parse(event));
  }
  return out;
}

json post(httplib::Client& c, const std::string& path, const json& body, int expect) {
  auto res = c.Post(path.c_str(), auth(), body.dump(), "application/json");
  REQUIRE_MESSAGE(res, "POST " << path << ": " << httplib::to_string(res.error()));
  CHECK_MESSAGE(res->status == expect, res->body);
  json j = json::parse(res->body, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), res->body);
  return j;
}

struct Stream {
  std::string text;           // the chunks' text (or chat delta content), concatenated
  std::string finish_reason;  // the last chunk's
  bool done = false;          // ended with data: [DONE]
  int events = 0;
  json logprobs = json::array();    // chat: the chunks' logprobs.content; completions: tokens
                                    // with their token_logprobs, as [token, logprob] pairs
  json tool_calls = json::array();  // chat: the deltas' tool_calls
};

Stream parse_sse(const std::string& body, bool chat) {
  Stream s;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    REQUIRE_MESSAGE(end != std::string::npos, "an event without its blank line: " << body);
    std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    REQUIRE_MESSAGE(event.rfind("data: ", 0) == 0, event);
    CHECK_FALSE(s.done);  // nothing after [DONE]
    std::string data = event.substr(6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    ++s.events;
    json j = json::parse(data);
    if (j["choices"].empty()) continue;  // the usage chunk
    const json& choice = j["choices"][0];
    if (chat) {
      if (choice["delta"].contains("content")) s.text += choice["delta"]["content"];
      if (choice["delta"].contains("tool_calls"))
        for (const json& call : choice["delta"]["tool_calls"]) s.tool_calls.push_back(call);
    } else {
      s.text += choice["text"].get<std::string>();
    }
    if (choice.contains("logprobs") && !choice["logprobs"].is_null()) {
      const json& lp = choice["logprobs"];
      if (chat) {
        for (const json& e : lp["content"]) s.logprobs.push_back(e);
      } else {
        for (size_t i = 0; i < lp["tokens"].size(); ++i)
          s.logprobs.push_back(json::array({lp["tokens"][i], lp["token_logprobs"][i]}));
      }
    }
    if (!choice["finish_reason"].is_null()) s.finish_reason = choice["finish_reason"];
  }
  return s;
}

}  // namespace

TEST_CASE("specd serve answers like specd run, streams, refuses bad requests and drains") {
  if (!specd::test::have_shipped_models()) return;
  std::string config = write_config("serve_e2e.toml", std::string("api_key = \"") + kKey +
                                                          "\"\nchat_template = \"chatml\"\n"
                                                          "max_body_bytes = 65536\n");
  // What `specd run` prints for the same prompt, greedy.
  specd::test::CliResult run = specd::test::run_program(
      {"timeout", "120", SPECD_CLI, "run", "-c", config, "-p", kPrompt, "-n", "24", "--json"});
  REQUIRE_MESSAGE(run.status == 0, run.err);
  json expected = json::parse(run.out);
  const std::string greedy = expected["text"];
  REQUIRE(!greedy.empty());

  ServerProcess server(config);
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());

  SUBCASE("health, models and the API key") {
    auto health = c.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(json::parse(health->body)["status"] == "ok");
    auto models = c.Get("/v1/models");
    REQUIRE(models);
    CHECK(models->status == 401);
    CHECK(json::parse(models->body)["error"]["code"] == "invalid_api_key");
    auto wrong = c.Get("/v1/models", {{"Authorization", "Bearer nope"}});
    REQUIRE(wrong);
    CHECK(wrong->status == 401);
    auto post_without = c.Post("/v1/completions", R"({"prompt":"x"})", "application/json");
    REQUIRE(post_without);
    CHECK(post_without->status == 401);
    models = c.Get("/v1/models", auth());
    REQUIRE(models);
    CHECK(models->status == 200);
    CHECK(json::parse(models->body)["data"][0]["id"] == "target");
    // The scheme is case-insensitive (RFC 9110); the key is not.
    auto lower = c.Get("/v1/models", {{"Authorization", std::string("bearer ") + kKey}});
    REQUIRE(lower);
    CHECK(lower->status == 200);
    auto upper_key = c.Get("/v1/models", {{"Authorization", std::string("BEARER TEST-KEY-123")}});
    REQUIRE(upper_key);
    CHECK(upper_key->status == 401);
  }

  SUBCASE("what llama-server's and vLLM's clients send runs, and stays exact") {
    const std::string other = "def fibonacci(n):";
    json one = {{"prompt", other}, {"max_tokens", 24}};
    const std::string other_greedy = post(c, "/v1/completions", one, 200)["choices"][0]["text"];
    // A batch of prompts: n choices each, choice i answering prompt i / n.
    json batch = {{"prompt", {kPrompt, other}}, {"max_tokens", 24}, {"n", 2}};
    json b = post(c, "/v1/completions", batch, 200);
    REQUIRE(b["choices"].size() == 4u);
    for (int i = 0; i < 4; ++i) {
      CHECK(b["choices"][i]["index"] == i);
      CHECK(b["choices"][i]["text"] == (i < 2 ? greedy : other_greedy));
    }
    json plain_one = post(c, "/v1/completions", one, 200);
    CHECK(b["usage"]["prompt_tokens"] == expected["stats"]["prompt_tokens"].get<int>() +
                                             plain_one["usage"]["prompt_tokens"].get<int>());
    // Token ids, from /tokenize, give the text prompt's output; /detokenize reads them back.
    json ids = post(c, "/tokenize", {{"content", kPrompt}, {"add_special", true}}, 200);
    REQUIRE(ids["tokens"].size() == expected["stats"]["prompt_tokens"].get<size_t>());
    CHECK(post(c, "/v1/completions", {{"prompt", ids["tokens"]}, {"max_tokens", 24}},
               200)["choices"][0]["text"] == greedy);
    json pieces = post(c, "/tokenize", {{"content", kPrompt}, {"with_pieces", true}}, 200);
    std::string joined;
    for (const json& p : pieces["tokens"]) joined += p["piece"].get<std::string>();
    CHECK(joined == kPrompt);
    json plain_ids = post(c, "/tokenize", {{"content", kPrompt}}, 200);
    CHECK(post(c, "/detokenize", {{"tokens", plain_ids["tokens"]}}, 200)["content"] == kPrompt);
    CHECK(post(c, "/detokenize", {{"tokens", {1 << 30}}}, 400)["error"]["param"] == "tokens[0]");
    CHECK(post(c, "/v1/completions", {{"prompt", {1 << 30}}}, 400)["error"]["param"] == "prompt");
    // n_predict, echo, the developer role, slot hints.
    json np =
        post(c, "/v1/completions",
             {{"prompt", kPrompt}, {"n_predict", 24}, {"cache_prompt", true}, {"id_slot", 0}}, 200);
    CHECK(np["choices"][0]["text"] == greedy);
    json echo =
        post(c, "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 24}, {"echo", true}}, 200);
    CHECK(echo["choices"][0]["text"] == kPrompt + greedy);
    auto streamed_echo = c.Post(
        "/v1/completions", auth(),
        json({{"prompt", kPrompt}, {"max_tokens", 24}, {"echo", true}, {"stream", true}}).dump(),
        "application/json");
    REQUIRE(streamed_echo);
    CHECK(parse_sse(streamed_echo->body, false).text == kPrompt + greedy);
    json chat_dev = {{"messages",
                      {{{"role", "developer"}, {"content", "Be brief."}},
                       {{"role", "user"}, {"content", "Hi"}}}},
                     {"max_tokens", 8}};
    json chat_sys = chat_dev;
    chat_sys["messages"][0]["role"] = "system";
    CHECK(post(c, "/v1/chat/completions", chat_dev, 200)["choices"][0]["message"]["content"] ==
          post(c, "/v1/chat/completions", chat_sys, 200)["choices"][0]["message"]["content"]);
    // min_tokens: with the end of sequence pushed to the top (logit_bias), plain decoding
    // ends right after min_tokens; a stop string is not looked for before them either. Each
    // time the draft model's tokens equal plain decoding's.
    json eos = post(c, "/tokenize", {{"content", "</s>"}, {"parse_special", true}}, 200);
    REQUIRE(eos["tokens"].size() == 1u);
    const std::string eos_id = std::to_string(eos["tokens"][0].get<int>());
    const std::string early_stop = greedy.substr(0, 2);
    for (const json& extra :
         {json{{"min_tokens", 5}, {"logit_bias", {{eos_id, 100}}}},
          json{{"min_tokens", 9}, {"logit_bias", {{eos_id, 100}}}, {"n", 1}},
          json{{"min_tokens", 10}, {"stop", early_stop}}, json{{"repetition_penalty", 1.4}}}) {
      json spec = {{"prompt", kPrompt}, {"max_tokens", 24}};
      spec.update(extra);
      json none = spec;
      none["speculative"] = {{"proposer", "none"}};
      json a = post(c, "/v1/completions", spec, 200);
      json p = post(c, "/v1/completions", none, 200);
      INFO(extra.dump());
      CHECK(a["choices"][0]["text"] == p["choices"][0]["text"]);
      CHECK(a["usage"]["completion_tokens"] == p["usage"]["completion_tokens"]);
      CHECK(a["usage"]["drafted_tokens"].get<int>() > 0);
      if (extra.contains("logit_bias")) {
        CHECK(p["usage"]["completion_tokens"] == extra["min_tokens"]);
        CHECK(p["choices"][0]["finish_reason"] == "stop");
      }
      if (extra.contains("stop")) CHECK(p["usage"]["completion_tokens"].get<int>() >= 10);
    }
    // The stop string ends the output early without min_tokens (so the case above is one).
    json early = post(c, "/v1/completions",
                      {{"prompt", kPrompt}, {"max_tokens", 24}, {"stop", early_stop}}, 200);
    CHECK(early["usage"]["completion_tokens"].get<int>() < 10);
    // Continuous usage: every chunk counts the tokens so far; the last equals the total.
    auto cont = c.Post("/v1/completions", auth(),
                       json({{"prompt", kPrompt},
                             {"max_tokens", 24},
                             {"stream", true},
                             {"stream_options", {{"continuous_usage_stats", true}}}})
                           .dump(),
                       "application/json");
    REQUIRE(cont);
    int last = -1, chunks = 0;
    for (size_t at = cont->body.find("data: {"); at != std::string::npos;
         at = cont->body.find("data: {", at + 1)) {
      const json chunk =
          json::parse(cont->body.substr(at + 6, cont->body.find("\n\n", at) - at - 6));
      REQUIRE(chunk.contains("usage"));
      CHECK(chunk["usage"]["prompt_tokens"] == expected["stats"]["prompt_tokens"]);
      CHECK(chunk["usage"]["completion_tokens"].get<int>() >= last);
      last = chunk["usage"]["completion_tokens"];
      ++chunks;
    }
    CHECK(chunks > 2);
    CHECK(last == int(expected["tokens"].size()));
    // What cannot be honoured is refused saying so.
    CHECK(post(c, "/v1/completions", {{"prompt", kPrompt}, {"best_of", 2}},
               400)["error"]["param"] == "best_of");
    // The openai client's models.retrieve.
    auto model = c.Get("/v1/models/target", auth());
    REQUIRE(model);
    CHECK(model->status == 200);
    CHECK(json::parse(model->body)["id"] == "target");
    auto missing = c.Get("/v1/models/gpt-4o", auth());
    REQUIRE(missing);
    CHECK(missing->status == 404);
  }

  SUBCASE("llama-server's /completion: its fields, its shapes, the same greedy text") {
    json r = post(c, "/completion",
                  {{"prompt", kPrompt}, {"n_predict", 24}, {"return_tokens", true}}, 200);
    CHECK(r["content"] == greedy);
    CHECK(r["tokens"] == expected["tokens"]);
    CHECK(r["stop"] == true);
    CHECK(r["stop_type"] == "limit");
    CHECK(r["tokens_evaluated"] == expected["stats"]["prompt_tokens"]);
    CHECK(r["timings"]["draft_n"].get<int>() > 0);
    CHECK(r["timings"]["draft_n_accepted"].get<int>() <= r["timings"]["draft_n"].get<int>());
    // A stop word: named in the answer, the text cut before it.
    size_t mid = greedy.size() / 2;  // three ASCII bytes: whole characters
    while (mid + 3 < greedy.size() &&
           (static_cast<unsigned char>(greedy[mid]) | static_cast<unsigned char>(greedy[mid + 1]) |
            static_cast<unsigned char>(greedy[mid + 2])) >= 0x80)
      ++mid;
    const std::string word = greedy.substr(mid, 3);
    r = post(c, "/completion", {{"prompt", kPrompt}, {"n_predict", 24}, {"stop", {word}}}, 200);
    CHECK(r["stop_type"] == "word");
    CHECK(r["stopping_word"] == word);
    CHECK(r["content"] == greedy.substr(0, greedy.find(word)));
    // Streamed: pieces with stop false, then one object with stop true; no [DONE].
    auto res = c.Post("/completion", auth(),
                      json({{"prompt", kPrompt}, {"n_predict", 24}, {"stream", true}}).dump(),
                      "application/json");
    REQUIRE(res);
    CHECK(res->body.find("[DONE]") == std::string::npos);
    std::string text;
    int finals = 0;
    for (size_t at = res->body.find("data: "); at != std::string::npos;
         at = res->body.find("data: ", at + 1)) {
      const json e = json::parse(res->body.substr(at + 6, res->body.find("\n\n", at) - at - 6));
      text += e["content"].get<std::string>();
      if (e["stop"] == true) {
        ++finals;
        CHECK(e["stop_type"] == "limit");
        CHECK(e["tokens_predicted"] == 24);
      }
    }
    CHECK(finals == 1);
    CHECK(text == greedy);
    // What it cannot honour is refused by name.
    CHECK(post(c, "/completion", {{"prompt", kPrompt}, {"mirostat", 2}}, 400)["error"]["param"] ==
          "mirostat");
    CHECK(post(c, "/completion", {{"prompt", kPrompt}, {"json_schema", {{"type", "strin"}}}},
               400)["error"]["param"]
              .get<std::string>()
              .rfind("json_schema", 0) == 0);
  }

  SUBCASE("each client's typical requests run unchanged; greedy ones equal plain decoding") {
    for (const char* file : {"llama-server.json", "vllm.json"}) {
      std::ifstream in(fs::path(SPECD_CLIENT_SCRIPTS) / file);
      REQUIRE(in);
      const json script = json::parse(in);
      for (const json& step : script["requests"]) {
        const std::string route = step["route"];
        json body = step["body"];
        INFO(file << " " << route << " " << body.dump());
        const bool greedy_request = body.value("temperature", 1.0) == 0.0;
        auto answer = [&](const json& b) {
          auto got = c.Post(route, auth(), b.dump(), "application/json");
          REQUIRE(got);
          CHECK(got->status == 200);
          if (got->status != 200) MESSAGE(got->body);
          return got->body;
        };
        const std::string spec = answer(body);
        if (!greedy_request || route.find("tokenize") != std::string::npos) continue;
        body["speculative"] = {{"proposer", "none"}};
        const json digest = answer_digest(spec);
        CHECK(digest["0"].contains("text"));
        CHECK(digest == answer_digest(answer(body)));
      }
    }
  }

  SUBCASE("the gateway's vLLM-named metrics agree with specd's own") {
    for (int i = 0; i < 2; ++i) post(c, "/v1/completions", {{"prompt", kPrompt}}, 200);
    auto res = c.Get("/metrics", auth());
    REQUIRE(res);
    // Each sample line: its name with labels -> value.
    std::map<std::string, double> m;
    std::istringstream lines(res->body);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line[0] != '#')
        m[line.substr(0, line.rfind(' '))] = std::stod(line.substr(line.rfind(' ') + 1));
    const std::string model = "{model_name=\"target\"}";
    auto vllm = [&](const std::string& name) {
      REQUIRE_MESSAGE(m.count("vllm:" + name + model), name);
      return m["vllm:" + name + model];
    };
    CHECK(vllm("spec_decode_num_draft_tokens_total") == m["specd_drafted_tokens_total"]);
    CHECK(vllm("spec_decode_num_accepted_tokens_total") == m["specd_accepted_tokens_total"]);
    CHECK(vllm("generation_tokens_total") == m["specd_completion_tokens_total"]);
    CHECK(vllm("prompt_tokens_total") == m["specd_prompt_tokens_total"]);
    CHECK(vllm("spec_decode_num_drafts_total") > 0);
    CHECK(vllm("spec_decode_num_drafts_total") <= m["specd_target_passes_total"]);
    double per_position = 0;
    for (const auto& [key, v] : m)
      if (key.rfind("vllm:spec_decode_num_accepted_tokens_per_pos_total{", 0) == 0)
        per_position += v;
    CHECK(per_position == vllm("spec_decode_num_accepted_tokens_total"));
    CHECK(vllm("num_requests_running") == m["specd_running"]);
    CHECK(vllm("num_requests_waiting") == m["specd_queue_depth"]);
    const double blocks = m["specd_kv_blocks"];
    REQUIRE(blocks > 0);
    CHECK(vllm("kv_cache_usage_perc") ==
          doctest::Approx((blocks - m["specd_kv_blocks_free"]) / blocks));
    const std::string info =
        "vllm:cache_config_info{model_name=\"target\",block_size=\"16\","
        "num_gpu_blocks=\"" +
        std::to_string(int64_t(blocks)) + "\",num_cpu_blocks=\"0\"}";
    CHECK_MESSAGE(m[info] == 1, res->body);
  }

  SUBCASE("a greedy completion equals specd run's, streamed or not") {
    json body = {{"model", "target"}, {"prompt", kPrompt}, {"max_tokens", 24}};
    json r = post(c, "/v1/completions", body, 200);
    CHECK(r["object"] == "text_completion");
    CHECK(r["choices"][0]["text"] == greedy);
    CHECK(r["choices"][0]["finish_reason"] ==
          (expected["stop_reason"] == "length" ? "length" : "stop"));
    CHECK(r["usage"]["completion_tokens"] == expected["tokens"].size());
    CHECK(r["usage"]["prompt_tokens"] == expected["stats"]["prompt_tokens"]);
    CHECK(r["usage"]["drafted_tokens"] == expected["stats"]["drafted"]);
    CHECK(r["usage"]["accepted_tokens"] == expected["stats"]["accepted"]);
    CHECK(r["usage"]["tau"].get<double>() ==
          doctest::Approx(expected["stats"]["tau"].get<double>()));

    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto res = c.Post("/v1/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0);
    Stream s = parse_sse(res->body, false);
    CHECK(s.done);
    CHECK(s.events > 2);
    CHECK(s.text == greedy);
    CHECK(s.finish_reason == r["choices"][0]["finish_reason"]);

    // A stop string that spans tokens: the stream never shows what the final text cuts.
    REQUIRE(greedy.size() > 12);
    std::string stop = greedy.substr(greedy.size() / 2, 5);
    body["stop"] = stop;
    body.erase("stream_options");
    res = c.Post("/v1/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    Stream cut = parse_sse(res->body, false);
    body["stream"] = false;
    json whole = post(c, "/v1/completions", body, 200);
    CHECK(whole["choices"][0]["text"] == greedy.substr(0, greedy.find(stop)));
    CHECK(whole["choices"][0]["finish_reason"] == "stop");
    CHECK(cut.text == whole["choices"][0]["text"]);
    CHECK(cut.done);
  }

  SUBCASE("per-request speculation: exact rules give the same greedy text") {
    json body = {{"prompt", kPrompt}, {"max_tokens", 24}};
    body["speculative"] = {{"proposer", "none"}};
    json plain = post(c, "/v1/completions", body, 200);
    CHECK(plain["choices"][0]["text"] == greedy);
    CHECK(plain["usage"]["drafted_tokens"] == 0);
    body["speculative"] = {{"proposer", "ngram"}, {"rule", "exact-match"}, {"k", 2}};
    json ngram = post(c, "/v1/completions", body, 200);
    CHECK(ngram["choices"][0]["text"] == greedy);
    // A proposer without a rule takes its own default (exact-match for ngram), not the
    // configured draft model's rejection.
    body["speculative"] = {{"proposer", "ngram"}};
    CHECK(post(c, "/v1/completions", body, 200)["choices"][0]["text"] == greedy);
    // Refusals name the request's field, never the server's files or lines.
    auto no_server_paths = [](const json& answer) {
      const std::string message = answer["error"]["message"].get<std::string>();
      INFO(message);
      CHECK(message.find(".toml") == std::string::npos);
      CHECK(message.find(".gguf") == std::string::npos);
      CHECK(message.find('/') == std::string::npos);
    };
    body["speculative"] = {{"proposer", "ngram"}, {"rule", "rejection"}};
    json unpaired = post(c, "/v1/completions", body, 400);
    CHECK(unpaired["error"]["param"] == "speculative.rule");
    no_server_paths(unpaired);
    body["speculative"] = {{"rule", "typical"}};
    json lossy = post(c, "/v1/completions", body, 400);
    CHECK(lossy["error"]["param"] == "speculative.rule");
    no_server_paths(lossy);
    body["speculative"] = {{"rule", "typical"}, {"allow_lossy", true}};
    lossy = post(c, "/v1/completions", body, 400);
    CHECK(lossy["error"]["param"] == "speculative.allow_lossy");
    no_server_paths(lossy);
    body["speculative"] = {{"rule", "greedy"}};
    body["temperature"] = 0.7;
    json hot = post(c, "/v1/completions", body, 400);
    CHECK(hot["error"]["param"] == "temperature");
    body.erase("temperature");
    body["speculative"] = {{"proposer", "no-such-proposer"}};
    json unknown = post(c, "/v1/completions", body, 400);
    CHECK(unknown["error"]["param"] == "speculative.proposer");
    no_server_paths(unknown);
  }

  SUBCASE("penalties and logit_bias: the draft model's text equals plain decoding's") {
    json body = {{"prompt", kPrompt},          {"max_tokens", 32},
                 {"presence_penalty", 1.2},    {"frequency_penalty", 0.8},
                 {"logit_bias", {{"5", 3.0}}}, {"speculative", {{"proposer", "none"}}}};
    const json plain = post(c, "/v1/completions", body, 200);
    CHECK(plain["choices"][0]["text"] != greedy);  // the penalties change the text
    body.erase("speculative");                     // the configured draft model
    const json drafted = post(c, "/v1/completions", body, 200);
    CHECK(drafted["choices"][0]["text"] == plain["choices"][0]["text"]);
    CHECK(drafted["usage"]["drafted_tokens"].get<int>() > 0);
    body["logit_bias"] = {{"99999999", 1.0}};
    CHECK(post(c, "/v1/completions", body, 400)["error"]["message"].get<std::string>().find(
              "outside the vocabulary") != std::string::npos);
  }

  SUBCASE("logprobs: the same with and without the draft, streamed or not, chat or not") {
    json body = {{"prompt", kPrompt}, {"max_tokens", 24}, {"logprobs", 3}};
    body["speculative"] = {{"proposer", "none"}};
    const json plain = post(c, "/v1/completions", body, 200);
    body.erase("speculative");
    const json drafted = post(c, "/v1/completions", body, 200);
    CHECK(drafted["usage"]["drafted_tokens"].get<int>() > 0);
    const json& lp = plain["choices"][0]["logprobs"];
    CHECK(drafted["choices"][0]["logprobs"] == lp);  // bit-identical rows, identical values
    REQUIRE(lp["tokens"].size() == plain["usage"]["completion_tokens"].get<size_t>());
    std::string joined;
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
      CHECK(lp["text_offset"][i].get<size_t>() == joined.size());
      joined += lp["tokens"][i].get<std::string>();
      // Greedy: the chosen token is the most likely one, the first of its alternatives.
      CHECK(lp["top_logprobs"][i].size() <= 3);
      double best = -1e30;
      for (const auto& [text, v] : lp["top_logprobs"][i].items())
        best = std::max(best, v.get<double>());
      CHECK(lp["token_logprobs"][i].get<double>() == doctest::Approx(best));
      CHECK(lp["token_logprobs"][i].get<double>() <= 0);
    }
    CHECK(joined == greedy);
    body["stream"] = true;
    auto res = c.Post("/v1/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    const Stream st = parse_sse(res->body, false);
    REQUIRE(st.logprobs.size() == lp["tokens"].size());
    for (size_t i = 0; i < st.logprobs.size(); ++i) {
      CHECK(st.logprobs[i][0] == lp["tokens"][i]);
      CHECK(st.logprobs[i][1] == lp["token_logprobs"][i]);
    }
    // Chat: logprobs true with top_logprobs, in chat's shape.
    json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                 {"max_tokens", 12},
                 {"logprobs", true},
                 {"top_logprobs", 2}};
    const json cw = post(c, "/v1/chat/completions", chat, 200);
    const json& content = cw["choices"][0]["logprobs"]["content"];
    REQUIRE(content.size() == cw["usage"]["completion_tokens"].get<size_t>());
    CHECK(content[0]["top_logprobs"].size() == 2);
    CHECK(content[0]["bytes"].size() == content[0]["token"].get<std::string>().size());
    chat["stream"] = true;
    res = c.Post("/v1/chat/completions", auth(), chat.dump(), "application/json");
    REQUIRE(res);
    CHECK(parse_sse(res->body, true).logprobs == content);
    chat["stream"] = false;
    chat["logprobs"] = false;
    CHECK(post(c, "/v1/chat/completions", chat, 400)["error"]["param"] == "top_logprobs");
  }

  SUBCASE("tool_choice required: calls to the tools, the same with and without a draft") {
    json tools = json::parse(R"([{"type":"function","function":{"name":"get_time",
        "parameters":{"type":"object","properties":{"zone":{"enum":["UTC","CET"]},
        "hour":{"type":"integer"}},"required":["zone","hour"]}}},
        {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string","maxLength":12}},"required":["city"]}}}])");
    json body = {{"messages", {{{"role", "user"}, {"content", "What time is it in Oslo?"}}}},
                 {"max_tokens", 96},
                 {"tools", tools},
                 {"tool_choice", "required"},
                 {"parallel_tool_calls", false}};
    const json r = post(c, "/v1/chat/completions", body, 200);
    const json& choice = r["choices"][0];
    INFO(r.dump());
    CHECK(choice["finish_reason"] == "tool_calls");
    REQUIRE(choice["message"]["tool_calls"].size() == 1);
    const json& call = choice["message"]["tool_calls"][0];
    CHECK(call["type"] == "function");
    CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    if (call["function"]["name"] == "get_time") {
      CHECK((args["zone"] == "UTC" || args["zone"] == "CET"));
      CHECK(args["hour"].is_number_integer());
    } else {
      CHECK(call["function"]["name"] == "get_weather");
      CHECK(args["city"].get<std::string>().size() <= 12);
    }
    // Greedy: the draft changes nothing.
    body["speculative"] = {{"proposer", "none"}};
    const json plain = post(c, "/v1/chat/completions", body, 200);
    CHECK(plain["choices"][0]["message"]["tool_calls"][0]["function"] == call["function"]);
    // Streamed: the call in a delta, finish_reason tool_calls.
    body.erase("speculative");
    body["stream"] = true;
    auto res = c.Post("/v1/chat/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    const Stream st = parse_sse(res->body, true);
    CHECK(st.finish_reason == "tool_calls");
    REQUIRE(st.tool_calls.size() == 1);
    CHECK(st.tool_calls[0]["function"] == call["function"]);
    CHECK(st.text.empty());
    // A named choice: one call, whatever parallel_tool_calls says; cut by max_tokens inside
    // it, no content and no call, finish_reason length, streamed or not.
    json named = body;
    named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
    named["parallel_tool_calls"] = true;
    named["stream"] = false;
    const json one = post(c, "/v1/chat/completions", named, 200);
    CHECK(one["choices"][0]["message"]["tool_calls"].size() == 1);
    CHECK(one["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather");
    named["max_tokens"] = 6;
    const json cut = post(c, "/v1/chat/completions", named, 200);
    CHECK(cut["choices"][0]["finish_reason"] == "length");
    CHECK(cut["choices"][0]["message"]["content"].is_null());
    CHECK_FALSE(cut["choices"][0]["message"].contains("tool_calls"));
    named["stream"] = true;
    res = c.Post("/v1/chat/completions", auth(), named.dump(), "application/json");
    REQUIRE(res);
    const Stream cut_stream = parse_sse(res->body, true);
    CHECK(cut_stream.text.empty());
    CHECK(cut_stream.tool_calls.empty());
    CHECK(cut_stream.finish_reason == "length");
    // A tool result goes back into the conversation.
    body["stream"] = false;
    body["tool_choice"] = "auto";
    body["messages"].push_back({{"role", "assistant"},
                                {"content", nullptr},
                                {"tool_calls", choice["message"]["tool_calls"]}});
    body["messages"].push_back(
        {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "12:00"}});
    const json after = post(c, "/v1/chat/completions", body, 200);
    CHECK(after["usage"]["prompt_tokens"].get<int>() > r["usage"]["prompt_tokens"].get<int>());
  }

  SUBCASE("cache_salt: cached prompt blocks are shared only with the same salt") {
    std::string prompt = "Salted: the archivist catalogued every letter that arrived";
    while (prompt.size() < 240) prompt += ", with its date and its sender";
    auto hit_rows = [&c] { return prefix_hit_rows(c); };
    auto hits_of = [&](const char* salt) {
      json body = {{"prompt", prompt}, {"max_tokens", 2}};
      if (salt) body["cache_salt"] = salt;
      const double before = hit_rows();
      post(c, "/v1/completions", body, 200);
      return hit_rows() - before;
    };
    CHECK(hits_of("tenant-a") == 0);  // the first: nothing cached
    CHECK(hits_of("tenant-b") == 0);  // another salt: nothing of tenant-a's
    CHECK(hits_of(nullptr) == 0);     // unsalted: the shared partition, empty of this prompt
    CHECK(hits_of("tenant-a") > 0);   // the same salt: its own blocks
    CHECK(hits_of(nullptr) > 0);
    json bad = post(c, "/v1/completions", json{{"prompt", "x"}, {"cache_salt", ""}}, 400);
    CHECK(bad["error"]["param"] == "cache_salt");
  }

  SUBCASE("n choices: one prompt prefilled once, a generator each, streamed by index") {
    std::string prompt = "The lighthouse keeper wrote in his log every evening";
    while (prompt.size() < 200) prompt += ", noting the wind and the ships";
    auto hit_rows = [&c] { return prefix_hit_rows(c); };
    const double hits0 = hit_rows();
    json body = {
        {"prompt", prompt}, {"max_tokens", 16}, {"n", 3}, {"temperature", 0.9}, {"seed", 7}};
    const json a = post(c, "/v1/completions", body, 200);
    REQUIRE(a["choices"].size() == 3);
    std::set<std::string> texts;
    for (int i = 0; i < 3; ++i) {
      CHECK(a["choices"][i]["index"] == i);
      texts.insert(a["choices"][i]["text"].get<std::string>());
    }
    CHECK(texts.size() > 1);  // each choice its own generator
    CHECK(a["usage"]["completion_tokens"] == 48);
    const json again = post(c, "/v1/completions", body, 200);
    CHECK(again["choices"] == a["choices"]);  // the seed reproduces every choice
    body["n"] = 1;
    CHECK(post(c, "/v1/completions", body, 200)["choices"][0]["text"] ==
          a["choices"][0]["text"]);  // choice 0 is the n = 1 answer
    // The later choices took the prompt's blocks from the first's prefill.
    CHECK(hit_rows() - hits0 >= 2 * 16);
    // Streamed: chunks carry their choice's index; each index's text is that choice's.
    body["n"] = 2;
    body["stream"] = true;
    auto res = c.Post("/v1/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    std::string by_index[2];
    size_t pos = 0;
    int finished = 0;
    while ((pos = res->body.find("data: {", pos)) != std::string::npos) {
      const size_t end = res->body.find("\n\n", pos);
      const json j = json::parse(res->body.substr(pos + 6, end - pos - 6));
      pos = end;
      if (j["choices"].empty()) continue;
      const int i = j["choices"][0]["index"];
      by_index[i] += j["choices"][0]["text"].get<std::string>();
      finished += !j["choices"][0]["finish_reason"].is_null();
    }
    CHECK(finished == 2);
    CHECK(by_index[0] == a["choices"][0]["text"]);
    CHECK(by_index[1] == a["choices"][1]["text"]);
    body["n"] = 9;  // [server] max_n is 8
    const json too_many = post(c, "/v1/completions", body, 400);
    CHECK(too_many["error"]["param"] == "n");
    // The server's settings by name, never its files.
    CHECK(too_many["error"]["message"].get<std::string>().find(".toml") == std::string::npos);
  }

  SUBCASE("chat with the configured template, streamed equal to whole") {
    json body = {{"messages",
                  {{{"role", "system"}, {"content", "Be brief."}},
                   {{"role", "user"}, {"content", "Tell a story."}}}},
                 {"max_tokens", 12}};
    json r = post(c, "/v1/chat/completions", body, 200);
    CHECK(r["object"] == "chat.completion");
    CHECK(r["choices"][0]["message"]["role"] == "assistant");
    const std::string text = r["choices"][0]["message"]["content"];
    body["stream"] = true;
    auto res = c.Post("/v1/chat/completions", auth(), body.dump(), "application/json");
    REQUIRE(res);
    Stream s = parse_sse(res->body, true);
    CHECK(s.done);
    CHECK(s.text == text);
  }

  SUBCASE("bad requests are 400s naming the field, and the server keeps serving") {
    CHECK(post(c, "/v1/completions", json{{"prompt", "x"}, {"temperature", -1}},
               400)["error"]["param"] == "temperature");
    CHECK(post(c, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", "many"}},
               400)["error"]["param"] == "max_tokens");
    CHECK(post(c, "/v1/completions", json{{"prompt", "x"}, {"surprise", true}},
               400)["error"]["param"] == "surprise");
    CHECK(post(c, "/v1/completions", json{{"prompt", "x"}, {"model", "gpt-4"}},
               404)["error"]["param"] == "model");
    CHECK(post(c, "/v1/chat/completions", json{{"messages", json::array()}},
               400)["error"]["param"] == "messages");
    CHECK(post(c, "/v1/completions", json{{"prompt", "x"}, {"logit_bias", {{"99999", 1}}}},
               400)["error"]["param"] == "logit_bias");
    // A grammar past the matcher's bound once the model has opened ten brackets: the same
    // 400 naming it with the draft model as without (a failed draft mask is not remembered
    // as an empty one).
    const std::string ambiguous =
        "root ::= e\ne ::= \"(\" e \")\" | \"(\" e \"]\" | \"((((((((((((((((((((x\"";
    for (const json& speculative : {json::object(), json{{"proposer", "none"}}}) {
      CAPTURE(speculative.dump());
      json refused = post(c, "/v1/completions",
                          json{{"prompt", "x"},
                               {"max_tokens", 30},
                               {"grammar", ambiguous},
                               {"speculative", speculative}},
                          400);
      CHECK(refused["error"]["param"] == "grammar");
      CHECK(refused["error"]["message"].get<std::string>().find("too ambiguous") !=
            std::string::npos);
    }
    // A grammar no token can ever satisfy: the client's error, named, not a server error.
    for (const char* impossible :
         {"root ::= [^\\x00-\\U0010FFFF]", "root ::= [\\uD800-\\uDFFF]+"}) {
      CAPTURE(impossible);
      CHECK(post(c, "/v1/completions",
                 json{{"prompt", "x"}, {"max_tokens", 4}, {"grammar", impossible}},
                 400)["error"]["param"] == "grammar");
    }
    auto broken = c.Post("/v1/completions", auth(), "{\"prompt\": ", "application/json");
    REQUIRE(broken);
    CHECK(broken->status == 400);
    auto big = c.Post("/v1/completions", auth(), "{\"prompt\":\"" + std::string(70000, 'a') + "\"}",
                      "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);
    // Longer than the model's context (512 tokens), whole or streamed: a 400 before any text.
    std::string words;
    for (int i = 0; i < 2000; ++i) words += " word" + std::to_string(i);
    CHECK(post(c, "/v1/completions", json{{"prompt", words}}, 400)["error"]["param"] == "prompt");
    CHECK(post(c, "/v1/completions", json{{"prompt", words}, {"stream", true}},
               400)["error"]["param"] == "prompt");
    auto nowhere = c.Get("/v2/nothing", auth());
    REQUIRE(nowhere);
    CHECK(nowhere->status == 404);
    json ok = post(c, "/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 24}}, 200);
    CHECK(ok["choices"][0]["text"] == greedy);
    auto metrics = c.Get("/metrics", auth());
    REQUIRE(metrics);
    CHECK(metrics->body.find("specd_requests_total{endpoint=\"/v1/completions\",status=\"400\"}") !=
          std::string::npos);
    CHECK(metrics->body.find("specd_completion_tokens_total") != std::string::npos);
    CHECK(metrics->body.find("specd_requests_total{endpoint=\"other\",status=\"404\"} 1") !=
          std::string::npos);
    CHECK(metrics->body.find("/v2/nothing") == std::string::npos);
    // The scheduler's steps: the requests above took some, each with its pass.
    for (const char* counter : {"specd_steps_total ", "specd_step_rows_total ",
                                "specd_step_seconds_total ", "specd_step_pass_seconds_total ",
                                "specd_kv_blocks ", "specd_prefix_prompt_rows_total "}) {
      const size_t at = metrics->body.find(std::string("\n") + counter);
      REQUIRE(at != std::string::npos);
      CHECK(std::stod(metrics->body.substr(at + 1 + std::strlen(counter))) > 0);
    }
    // Latency histograms: every finished choice observed once (the greedy request above had
    // 24 tokens, so 23 inter-token intervals at least from it), the +Inf bucket equal to the
    // count, and the draft model's acceptance as a fraction.
    auto value = [&](const std::string& line) {
      const size_t at = metrics->body.find("\n" + line + " ");
      REQUIRE_MESSAGE(at != std::string::npos, line);
      return std::stod(metrics->body.substr(at + line.size() + 2));
    };
    for (const char* h : {"specd_time_to_first_token_seconds", "specd_e2e_request_latency_seconds",
                          "specd_request_queue_time_seconds", "specd_request_prefill_seconds",
                          "specd_request_decode_seconds", "specd_request_acceptance_ratio",
                          "specd_inter_token_latency_seconds"}) {
      INFO(h);
      const std::string name = h;
      CHECK(value(name + "_count") >= 1);
      CHECK(value(name + "_bucket{le=\"+Inf\"}") == value(name + "_count"));
      CHECK(value(name + "_sum") >= 0);
    }
    CHECK(value("specd_inter_token_latency_seconds_count") >= 23);
    CHECK(value("specd_request_acceptance_ratio_bucket{le=\"1\"}") ==
          value("specd_request_acceptance_ratio_count"));
  }

  SUBCASE("SIGTERM drains a request in flight and exits 0") {
    // The signal comes with the first chunk: the request is in flight.
    // While it drains: not ready (the probe fails first), still alive.
    std::string ready_status, live_status;
    auto probe = [&] {
      httplib::Client p = client(server.port());
      for (int i = 0; i < 100 && ready_status != "draining"; ++i) {  // at most 2 s
        auto r = p.Get("/readyz");
        ready_status = r ? json::parse(r->body)["status"].get<std::string>() : "";
        if (ready_status != "draining") std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      auto l = p.Get("/livez");
      live_status = l && l->status == 200 ? "alive" : "";
    };
    // 400 tokens keep the drain open long enough for the probe on a loaded machine (24 once
    // finished, and the process exited, before the probe connected); greedy's first 24 tokens
    // are the answer's start.
    Stream s = parse_sse(stream_signalled(server, 400, SIGTERM, probe), false);
    CHECK(ready_status == "draining");
    CHECK(live_status == "alive");
    CHECK_MESSAGE(s.done, server.log());
    CHECK(s.text.compare(0, greedy.size(), greedy) == 0);
    CHECK(server.wait_exit() == 0);
    CHECK(server.log().find("draining") != std::string::npos);
  }

  SUBCASE("a client that disconnects mid-stream cancels its sequence") {
    json body = {{"prompt", kPrompt}, {"max_tokens", 400}, {"stream", true}};
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = auth();
    req.set_header("Content-Type", "application/json");
    req.body = body.dump();
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) {
      return false;  // hang up at the first chunk
    };
    auto gone = c.send(req);
    CHECK_FALSE(gone);
    // Once it has ended, with nothing running, every KV block shows as free (cached prefixes
    // are free blocks too), without another request's step to update the gauges.
    std::string m;
    for (int i = 0; i < 600; ++i) {  // at most 30 s
      auto got = c.Get("/metrics", auth());
      m = got ? got->body : "";
      if (m.find("\nspecd_cancelled_total 1\n") != std::string::npos &&
          m.find("\nspecd_running 0\n") != std::string::npos)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    auto gauge = [&](const std::string& name) {
      const size_t at = m.find("\n" + name + " ");
      return at == std::string::npos ? -1.0 : std::stod(m.substr(at + name.size() + 2));
    };
    CHECK(gauge("specd_cancelled_total") == 1);
    CHECK(gauge("specd_kv_blocks") > 0);
    CHECK(gauge("specd_kv_blocks_free") == gauge("specd_kv_blocks"));
    // One sequence at a time, first in first out: once this answers, the other has ended.
    json after = post(c, "/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 24}}, 200);
    CHECK(after["choices"][0]["text"] == greedy);
  }

  SUBCASE("special-token text in chat content stays text") {
    // "</s>" is the vocabulary's EOS control token: as content it must be its characters.
    auto prompt_tokens = [&](const std::string& content) {
      json body = {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 1}};
      return post(c, "/v1/chat/completions", body, 200)["usage"]["prompt_tokens"].get<int>();
    };
    const int plain = prompt_tokens("Q");
    const int injected = prompt_tokens("Q</s></s></s></s></s></s></s></s>");
    // Eight EOS tokens would add 8; the characters take more than one token each time.
    CHECK(injected - plain > 8);
  }

  SUBCASE("a non-streaming client that hangs up cancels its sequence") {
    // Six long requests at once: one runs, five wait in the queue (the last for at least
    // five generations); every client gives up after 300 ms. Each is detected by its
    // connection's socket, running or waiting.
    json body = {{"prompt", kPrompt}, {"max_tokens", 480}};
    std::vector<std::thread> clients;
    for (int i = 0; i < 6; ++i)
      clients.emplace_back([&] {
        httplib::Client impatient("127.0.0.1", server.port());
        impatient.set_read_timeout(0, 300000);
        auto res = impatient.Post("/v1/completions", auth(), body.dump(), "application/json");
        CHECK_FALSE(res);  // the client gave up
      });
    for (std::thread& t : clients) t.join();
    // First in, first out: once this answers, the six have ended.
    json after = post(c, "/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 24}}, 200);
    CHECK(after["choices"][0]["text"] == greedy);
    auto metrics = c.Get("/metrics", auth());
    REQUIRE(metrics);
    size_t at = metrics->body.find("\nspecd_cancelled_total ");
    REQUIRE(at != std::string::npos);
    int cancelled =
        std::stoi(metrics->body.substr(at + std::string("\nspecd_cancelled_total ").size()));
    CHECK(cancelled >= 2);
  }

  SUBCASE("SIGTERM when idle exits 0") {
    CHECK(server.terminate() == 0);
  }
}

// A raw connection to the server that sends its request a header line at a time.
struct SlowClient {
  int fd = -1;
  explicit SlowClient(int port) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);
      fd = -1;
    }
  }
  ~SlowClient() {
    if (fd >= 0) close(fd);
  }
  void send_text(const std::string& text) const {
    if (fd >= 0) (void)send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  }
  // The server closed the connection (end of stream or reset), seen without blocking.
  bool closed_by_server() const {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
};

// Sends `bytes` on a fresh loopback connection and returns what the server sends back until
// it closes the connection or stays silent for 8 s.
std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  const timeval wait{8, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(fd);
  return got;
}

TEST_CASE("request framing: refused from the headers, before the body is read") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_framing.toml", "max_body_bytes = 4096\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\n";
  const std::string body = "{\"prompt\": \"a\", \"max_tokens\": 1}";
  const std::string chunk = "1f\r\n" + body + "\r\n0\r\n\r\n";
  // One answer with this status, then the connection closes: nothing after the headers is
  // taken for another request.
  auto starts = [](const std::string& answer, const char* status) {
    size_t answers = 0;
    for (size_t at = answer.find("HTTP/1.1 "); at != std::string::npos;
         at = answer.find("HTTP/1.1 ", at + 1))
      ++answers;
    return answer.rfind(status, 0) == 0 && answers == 1;
  };
  // A chunked body however large is never read: 411, whatever follows the headers.
  std::string a = raw_exchange(
      server.port(), head + "Transfer-Encoding: chunked\r\n\r\n" + std::string(100000, 'x'));
  CHECK_MESSAGE(starts(a, "HTTP/1.1 411"), a);
  CHECK(a.find("length_required") != std::string::npos);
  a = raw_exchange(server.port(),
                   head + "Content-Length: 31\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk);
  CHECK_MESSAGE(starts(a, "HTTP/1.1 400"), a);
  CHECK(a.find("both Content-Length and Transfer-Encoding") != std::string::npos);
  for (const std::string length : {"-1", "18446744073709551616", "0x10", "1 2", "12, 13"}) {
    CAPTURE(length);
    a = raw_exchange(server.port(), head + "Content-Length: " + length + "\r\n\r\n");
    CHECK_MESSAGE(starts(a, "HTTP/1.1 400"), a);
  }
  // Over max_body_bytes: 413 at once, the body never sent.
  a = raw_exchange(server.port(), head + "Content-Length: 1000000000\r\n\r\n");
  CHECK_MESSAGE(starts(a, "HTTP/1.1 413"), a);
  // A well-framed request still works.
  a = raw_exchange(server.port(), head + "Connection: close\r\nContent-Length: " +
                                      std::to_string(body.size()) + "\r\n\r\n" + body);
  CHECK_MESSAGE(starts(a, "HTTP/1.1 200"), a);
  CHECK(server.terminate() == 0);
}

TEST_CASE("pipelined requests on one connection are answered, in order") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_pipelined.toml", ""));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  const std::string body = "{\"prompt\": \"a\", \"max_tokens\": 2}";
  // Four requests in one write; the last asks the server to close after answering it.
  const std::string a =
      raw_exchange(server.port(),
                   "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                   "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                   "application/json\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body +
                       "GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::vector<size_t> at;
  for (const char* mark :
       {"{\"status\":\"ok\"}", "\"object\":\"list\"", "\"text_completion\"", "\"alive\""})
    at.push_back(a.find(mark));
  CAPTURE(a);
  for (size_t i = 0; i < at.size(); ++i) CHECK(at[i] != std::string::npos);
  CHECK(std::is_sorted(at.begin(), at.end()));
  size_t answers = 0;
  for (size_t p = a.find("HTTP/1.1 200"); p != std::string::npos; p = a.find("HTTP/1.1 200", p + 1))
    ++answers;
  CHECK(answers == 4);
  CHECK(server.terminate() == 0);
}

TEST_CASE("HTTP/1.0 streams come unchunked, HEAD answers carry no body") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_http10.toml", ""));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  const std::string body = "{\"prompt\": \"a\", \"max_tokens\": 3, \"stream\": true}";
  // HTTP/1.0 knows no chunks: the events as they are, the connection's end ends the answer.
  std::string a = raw_exchange(server.port(), "POST /v1/completions HTTP/1.0\r\nContent-Length: " +
                                                  std::to_string(body.size()) + "\r\n\r\n" + body);
  CAPTURE(a);
  CHECK(a.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(a.find("Transfer-Encoding") == std::string::npos);
  CHECK(a.find("\r\n\r\ndata: {") != std::string::npos);
  CHECK(a.find("data: [DONE]") != std::string::npos);
  // HEAD: a head whose body length says nothing follows, and the connection goes on.
  a = raw_exchange(server.port(),
                   "HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK(a.find("Content-Length: 0\r\n") != std::string::npos);
  CHECK(a.find("\"alive\"") != std::string::npos);
  CHECK(a.find("\"object\"") == std::string::npos);
  CHECK(server.terminate() == 0);
}

TEST_CASE("a client that leaves while its request is queued: it ends, and the server drains") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_leave.toml", "max_sequences = 1\n"),
                       {"sampling.ignore_eos=true"});
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  std::thread running([&] {
    httplib::Client rc = client(server.port());
    rc.Post("/v1/completions", R"({"prompt":"x","max_tokens":100000})", "application/json");
  });
  CHECK(specd::test::metrics_show(c, "specd_running 1"));
  // Queued behind it, then gone.
  const std::string body = R"({"prompt":"y","max_tokens":8})";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(server.port()));
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size()));
  CHECK(specd::test::metrics_show(c, "specd_queue_depth 1"));
  close(fd);
  running.join();
  // Its handler ended once the job did (started, then done as cancelled), so the drain has
  // nothing left to wait for.
  CHECK(specd::test::metrics_show(c, "specd_cancelled_total 1"));
  CHECK(server.terminate() == 0);
}

TEST_CASE("slow clients are cut: health and completions answer while 40 connections dribble") {
  if (!specd::test::have_shipped_models()) return;
  const std::string config =
      write_config("serve_slow.toml",
                   "queue_limit = 4\nmax_sequences = 4\nrequest_timeout_s = 3\n"
                   "max_waiting_per_client = 8\ndrain_timeout_s = 2\n");
  ServerProcess server(config);
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  // 40 connections (the handler pool here is 12 threads) each sending a header line every
  // 500 ms and never finishing their request.
  std::vector<std::unique_ptr<SlowClient>> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(std::make_unique<SlowClient>(server.port()));
    REQUIRE(slow.back()->fd >= 0);
    slow.back()->send_text("POST /v1/completions HTTP/1.1\r\nHost: x\r\n");
  }
  // Stopped and joined however the test leaves this scope (a failed REQUIRE included).
  struct Dribble {
    std::atomic<bool> on{true};
    std::thread thread;
    ~Dribble() {
      on = false;
      if (thread.joinable()) thread.join();
    }
  } dribble;
  dribble.thread = std::thread([&] {
    for (int line = 0; dribble.on; ++line) {
      for (auto& c : slow) c->send_text("X-Line-" + std::to_string(line) + ": 1\r\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  httplib::Client c = client(server.port());
  c.set_read_timeout(20, 0);  // bounded: the defect made these wait for as long as the dribble
  auto health = c.Get("/health");
  REQUIRE_MESSAGE(health, httplib::to_string(health.error()));
  CHECK(health->status == 200);
  auto done = c.Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 4}}.dump(),
                     "application/json");
  REQUIRE_MESSAGE(done, httplib::to_string(done.error()));
  CHECK(done->status == 200);
  // Every dribbling connection is cut: the oldest beyond 8 at once, the rest after 3 s.
  size_t cut = 0;
  for (int wait = 0; wait < 200 && cut < slow.size(); ++wait) {
    cut = 0;
    for (auto& s : slow) cut += s->closed_by_server() || s->fd < 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(cut == slow.size());
  dribble.on = false;
  dribble.thread.join();
  // A fresh batch of dribblers does not keep SIGTERM from ending the server.
  std::vector<std::unique_ptr<SlowClient>> more;
  for (int i = 0; i < 20; ++i) {
    more.push_back(std::make_unique<SlowClient>(server.port()));
    more.back()->send_text("GET /health HTTP/1.1\r\n");
  }
  CHECK(server.terminate() == 0);
}

TEST_CASE("a plugin failing inside serve: the request gets 500 and the server logs why") {
  if (!specd::test::have_shipped_models()) return;
  const std::string config = write_config("serve_plugin_error.toml", "");
  // It fails once the server's self-test at load has passed (a few rounds).
  ServerProcess server(
      config, {"plugins.paths=[\"" + SPECD_HARDENING_PLUGINS + "\"]", "acceptance.rule=bad-rule",
               "acceptance.mode=\"fail-after\"", "acceptance.after=20"});
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  auto res = c.Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 64}}.dump(),
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 500);
  CHECK(res->body.find("asked to fail") != std::string::npos);
  const std::string log = server.log();
  const size_t at = log.find("specd: error: serve: request failed: ");
  REQUIRE_MESSAGE(at != std::string::npos, log);
  CHECK(log.find("asked to fail", at) != std::string::npos);
  CHECK(server.terminate() == 0);
}

TEST_CASE("a strategy that fails at its first generation stops serve at load, naming why") {
  if (!specd::test::have_shipped_models()) return;
  const std::string config = write_config("serve_plugin_first.toml", "");
  ServerProcess server(config, {"plugins.paths=[\"" + SPECD_HARDENING_PLUGINS + "\"]",
                                "acceptance.rule=bad-rule", "acceptance.mode=\"fail\""});
  // The port opened before the load; the server never said ready, and the process ended
  // with the reason instead of answering every request with 500.
  CHECK(server.port() == 0);
  const std::string log = server.log();
  CHECK_MESSAGE(log.find("its first generation failed") != std::string::npos, log);
  CHECK(log.find("asked to fail") != std::string::npos);
  CHECK(log.find("specd serve: ready") == std::string::npos);
}

TEST_CASE("a request naming a plugin refused at startup gets its reason, without server paths") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_refused_plugin.toml", ""), {},
                       {"SPECD_PLUGIN_PATH=" + SPECD_VERSION_PLUGINS});
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  json body = {
      {"prompt", kPrompt}, {"max_tokens", 4}, {"speculative", {{"rule", "version-next-minor"}}}};
  auto res = c.Post("/v1/completions", body.dump(), "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  const std::string message = json::parse(res->body)["error"]["message"];
  INFO(message);
  CHECK(message.find("was found but not loaded") != std::string::npos);
  CHECK(message.find("newer than the host's") != std::string::npos);
  CHECK(message.find("a plugin folder") != std::string::npos);
  CHECK(message.find(SPECD_VERSION_PLUGINS) == std::string::npos);
  CHECK(message.find(".toml") == std::string::npos);
  CHECK(server.terminate() == 0);
}

TEST_CASE("past the queue limit a request gets 503 with an OpenAI error body") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_queue.toml", "queue_limit = 0\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  auto res = c.Post("/v1/completions", R"({"prompt":"x"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 503);
  json j = json::parse(res->body);
  CHECK(j["error"]["code"] == "queue_full");
  CHECK(j["error"]["message"].get<std::string>().find("queue_limit") != std::string::npos);
  // n choices that the queue could never hold together: a 400 naming n, not "retry later".
  res = c.Post("/v1/completions", R"({"prompt":"x","n":2})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  CHECK(json::parse(res->body)["error"]["param"] == "n");
  CHECK(server.terminate() == 0);
}

TEST_CASE(
    "k = \"auto\" in the configuration: the passes are timed before ready, not in a request") {
  if (!specd::test::have_shipped_models()) return;
  const std::vector<std::string> info = {"SPECD_LOG_LEVEL=info"};  // logs the timing line
  const std::string timed = "the target's pass timed for k = \"auto\"";
  {
    ServerProcess fixed(write_config("serve_fixed_k.toml", ""), {}, info);
    REQUIRE_MESSAGE(fixed.port() > 0, fixed.log());
    CHECK(fixed.log().find(timed) == std::string::npos);  // k = 3: nothing to time
    CHECK(fixed.terminate() == 0);
  }
  ServerProcess server(write_config("serve_auto_k.toml", ""), {"proposer.k=\"auto\""}, info);
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  const std::string log = server.log();
  const size_t at = log.find(timed);
  REQUIRE_MESSAGE(at != std::string::npos, log);
  CHECK(at < log.find("specd serve: ready"));
  httplib::Client c = client(server.port());
  auto res = c.Post("/v1/completions", json{{"prompt", kPrompt}, {"max_tokens", 8}}.dump(),
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(server.log().find(timed, at + 1) == std::string::npos);  // timed once
  CHECK(server.terminate() == 0);
}

TEST_CASE("chat is refused with a clear error when the model has no template") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_notemplate.toml", ""));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  auto res = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})",
                    "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  std::string message = json::parse(res->body)["error"]["message"];
  CHECK(message.find("chat_template") != std::string::npos);
  CHECK(server.terminate() == 0);
}

TEST_CASE(
    "a target file name that is not UTF-8: /v1/models and verify answer, the id uses U+FFFD") {
  if (!specd::test::have_shipped_models()) return;
  // TOML text is UTF-8, so such a path comes from a --set value that is not TOML.
  const fs::path odd = fs::current_path() / "t\xff\xfe.gguf";
  fs::copy_file(kModels + "/target.gguf", odd, fs::copy_options::overwrite_existing);
  ServerProcess server(write_config("serve_odd_name.toml", ""), {"target.model=" + odd.string()});
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  auto models = c.Get("/v1/models");
  REQUIRE(models);
  CHECK(models->status == 200);
  const std::string id = json::parse(models->body)["data"][0]["id"];
  CHECK(id == "t\xEF\xBF\xBD\xEF\xBF\xBD");
  auto done =
      c.Post("/v1/completions", json{{"model", id}, {"prompt", kPrompt}, {"max_tokens", 4}}.dump(),
             "application/json");
  REQUIRE(done);
  CHECK(done->status == 200);
  auto open = c.Post("/v1/verify", R"({"op":"open"})", "application/json");
  REQUIRE(open);
  CHECK(open->status == 200);
  CHECK(json::parse(open->body).is_object());
  CHECK(server.terminate() == 0);
  fs::remove(odd);
}

TEST_CASE("a chat template file is recognised, or refused at startup naming the file") {
  if (!specd::test::have_shipped_models()) return;
  {
    std::ofstream(fs::current_path() / "llama2.jinja")
        << "{% for m in messages %}{{ bos_token + '[INST] <<SYS>>\\n' + m['content'] + "
           "' [/INST]' }}{% endfor %}";
  }
  std::string bad = write_config(
      "serve_badtemplate.toml",
      "chat_template_file = \"" + (fs::current_path() / "llama2.jinja").string() + "\"\n");
  specd::test::CliResult r =
      specd::test::run_program({"timeout", "120", SPECD_CLI, "serve", "-c", bad});
  CHECK(r.status == 2);
  CHECK(r.err.find("llama2.jinja: the chat template matches no known family") != std::string::npos);
  CHECK(r.err.find("listening") == std::string::npos);

  {
    std::ofstream(fs::current_path() / "qwen.jinja")
        << "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
           "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
  }
  ServerProcess server(write_config(
      "serve_filetemplate.toml",
      "chat_template_file = \"" + (fs::current_path() / "qwen.jinja").string() + "\"\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  CHECK(server.log().find("chatml recognised in") != std::string::npos);
  httplib::Client c = client(server.port());
  auto res =
      c.Post("/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(server.terminate() == 0);
}

TEST_CASE("max_tokens is clamped to the room the context or kv_budget leaves") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_limits.toml", "kv_budget = 64\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  httplib::Client c = client(server.port());
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    json body = {{"prompt", kPrompt}, {"max_tokens", 200}, {"stream", stream}};
    if (stream) body["stream_options"] = {{"include_usage", true}};
    auto res = c.Post("/v1/completions", body.dump(), "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status == 200, res->body);
    json usage;
    std::string finish;
    if (stream) {
      Stream s = parse_sse(res->body, false);
      finish = s.finish_reason;
      size_t at = res->body.rfind("\"usage\"");
      REQUIRE(at != std::string::npos);
      size_t line = res->body.rfind("data: ", at);
      usage = json::parse(res->body.substr(line + 6, res->body.find("\n", at) - line - 6))["usage"];
    } else {
      json r = json::parse(res->body);
      finish = r["choices"][0]["finish_reason"];
      usage = r["usage"];
    }
    CHECK(finish == "length");
    CHECK(usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>() == 64);
  }
  // A prompt that fills kv_budget leaves no room: a 400 naming the prompt and the budget.
  std::string words;
  for (int i = 0; i < 80; ++i) words += " word" + std::to_string(i);
  auto res = c.Post("/v1/completions", json{{"prompt", words}}.dump(), "application/json");
  REQUIRE(res);
  CHECK(res->status == 400);
  json j = json::parse(res->body);
  CHECK(j["error"]["param"] == "prompt");
  CHECK(j["error"]["message"].get<std::string>().find("kv_budget") != std::string::npos);
  CHECK(server.terminate() == 0);
}

TEST_CASE("past drain_timeout_s, SIGTERM cancels what runs with an error, and exits 0") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_deadline.toml", "drain_timeout_s = 0\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  // A non-streaming request first, running before the signal (bounded wait on the gauge).
  json whole = {{"prompt", kPrompt}, {"max_tokens", 480}};
  int whole_status = -1;
  std::string whole_body;
  std::thread whole_client([&] {
    httplib::Client wc = client(server.port());
    auto r = wc.Post("/v1/completions", whole.dump(), "application/json");
    if (r) {
      whole_status = r->status;
      whole_body = r->body;
    } else {
      whole_body = httplib::to_string(r.error());
    }
  });
  httplib::Client c = client(server.port());
  CHECK(specd::test::metrics_show(c, "specd_running 1"));
  const std::string received = stream_signalled(server, 480, SIGTERM);
  whole_client.join();
  REQUIRE_MESSAGE(!received.empty(), server.log());
  // The stream ends with an error event (code drain_timeout) and [DONE], never with a
  // finish_reason that would pass the text so far for a finished answer.
  Stream s = parse_sse(received, false);
  CHECK(s.done);
  CHECK_MESSAGE(s.finish_reason.empty(), received);
  const size_t at = received.find("data: {\"error\":");
  REQUIRE_MESSAGE(at != std::string::npos, received);
  json event = json::parse(received.substr(at + 6, received.find("\n\n", at) - at - 6));
  CHECK(event["error"]["code"] == "drain_timeout");
  CHECK(event["error"]["message"].get<std::string>().find("drain_timeout_s") != std::string::npos);
  // The whole answer: a 503 with the same code.
  CHECK_MESSAGE(whole_status == 503, whole_body);
  json j = json::parse(whole_body, nullptr, false);
  REQUIRE_MESSAGE(j.is_object(), whole_body);
  CHECK(j["error"]["code"] == "drain_timeout");
  CHECK(server.wait_exit() == 0);
  CHECK_MESSAGE(
      server.log().find("drain_timeout_s passed: cancelled 2 request") != std::string::npos,
      server.log());
}

TEST_CASE("SIGHUP drains like SIGTERM; a second signal during a drain ends the server at once") {
  if (!specd::test::have_shipped_models()) return;
  SUBCASE("SIGHUP: the stream in flight ends with [DONE], then exit 0") {
    ServerProcess server(write_config("serve_hup.toml", ""));
    REQUIRE_MESSAGE(server.port() > 0, server.log());
    Stream s = parse_sse(stream_signalled(server, 24, SIGHUP), false);
    CHECK(s.done);
    CHECK(s.finish_reason == "length");
    CHECK(server.wait_exit() == 0);
    CHECK_MESSAGE(server.log().find("SIGHUP: draining") != std::string::npos, server.log());
  }
  SUBCASE("a second SIGTERM while the queue drains: exit 143 without waiting for it") {
    // 48 requests of 480 tokens, one sequence at a time: seconds of work to drain.
    ServerProcess server(
        write_config("serve_second.toml",
                     "drain_timeout_s = 600\nmax_sequences = 1\nqueue_limit = 64\n"),
        {"sampling.ignore_eos=true", "proposer.kind=\"none\""});
    REQUIRE_MESSAGE(server.port() > 0, server.log());
    std::atomic<int> answered{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < 48; ++i)
      clients.emplace_back([&] {
        httplib::Client rc = client(server.port());
        auto r =
            rc.Post("/v1/completions", R"({"prompt":"x","max_tokens":480})", "application/json");
        if (r && r->status == 200) ++answered;
      });
    httplib::Client c = client(server.port());
    int queued = 0;
    for (int i = 0; i < 600 && queued < 16; ++i) {
      auto m = c.Get("/metrics");
      const std::string name = "\nspecd_queue_depth ";
      if (m && m->body.find(name) != std::string::npos)
        queued = std::stoi(m->body.substr(m->body.find(name) + name.size()));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(queued >= 16);
    server.signal(SIGTERM);
    for (int i = 0; i < 600 && server.log().find("draining") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Later than the 200 ms in which a signal is taken for the first delivered twice.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    server.signal(SIGTERM);
    CHECK(server.wait_exit() == 128 + SIGTERM);
    for (std::thread& t : clients) t.join();
    CHECK(answered.load() < 48);  // cut short: the drain was not waited for
    CHECK_MESSAGE(server.log().find("second SIGTERM while draining: stopped") != std::string::npos,
                  server.log());
  }
  SUBCASE("SIGTERM twice at once (timeout(1) signals the child and its group): one drain") {
    ServerProcess server(write_config("serve_twice.toml", ""));
    REQUIRE_MESSAGE(server.port() > 0, server.log());
    httplib::Client c = client(server.port());
    CHECK(c.Get("/health"));
    server.signal(SIGTERM);
    server.signal(SIGTERM);
    CHECK(server.wait_exit() == 0);
  }
}

TEST_CASE("a public host needs api_key or allow_public_without_key; --host is only a host") {
  if (!specd::test::have_shipped_models()) return;
  std::string config = write_config("serve_public.toml", "");
  specd::test::CliResult open_bind = specd::test::run_program(
      {"timeout", "60", SPECD_CLI, "serve", "-c", config, "--host", "0.0.0.0"});
  CHECK(open_bind.status == 2);
  CHECK(open_bind.err.find("allow_public_without_key") != std::string::npos);
  CHECK(open_bind.err.find("listening") == std::string::npos);
  // A value that would close the TOML string and comment out the rest is taken as text:
  // not a loopback address, so refused like any other public host.
  const std::string hostile = "127.0.0.1\" # ";
  specd::test::CliResult r = specd::test::run_program(
      {"timeout", "60", SPECD_CLI, "serve", "-c", config, "--host", hostile});
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.err.find("host '" + hostile + "'") != std::string::npos, r.err);
  CHECK(r.err.find("listening") == std::string::npos);
}
TEST_CASE("serve: 16 concurrent completions over HTTP each equal the same completion alone") {
  if (!specd::test::have_shipped_models()) return;
  ServerProcess server(write_config("serve_batch.toml", "max_sequences = 16\n"));
  REQUIRE_MESSAGE(server.port() > 0, server.log());
  const std::vector<std::string> prompts = {"Once upon a time",         "def add(a, b):",
                                            "The capital of France is", "In 1492,",
                                            "She opened the door and",  "SELECT name FROM",
                                            "The quick brown fox",      "1, 2, 3,",
                                            "Dear Sir or Madam,",       "class Stack:",
                                            "It was a dark night;",     "The mitochondria is",
                                            "To be or not to be,",      "import os\nimport",
                                            "for i in range(10):",      "Hello, my name is"};
  auto body = [&](size_t i) {
    json b = {{"prompt", prompts[i]}, {"max_tokens", 16}, {"temperature", 0}};
    if (i % 2) b["speculative"] = {{"proposer", "none"}};  // two settings in one batch
    return b.dump();
  };
  auto complete = [&](size_t i) {
    httplib::Client c = client(server.port());
    auto res = c.Post("/v1/completions", body(i), "application/json");
    if (!res) return "error: " + httplib::to_string(res.error());
    if (res->status != 200) return "error: " + std::to_string(res->status) + " " + res->body;
    return json::parse(res->body)["choices"][0]["text"].get<std::string>();
  };
  std::vector<std::string> alone, together(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(complete(i));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i)
    threads.emplace_back([&, i] { together[i] = complete(i); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i << ": " << prompts[i]);
    CHECK(alone[i].rfind("error", 0) != 0);
    CHECK(together[i] == alone[i]);
  }
  CHECK(server.terminate() == 0);
}
