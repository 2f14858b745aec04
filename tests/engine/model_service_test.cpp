// The model service as plugins see it (host->models): forward_rows (ABI 0.2) computes the
// logits of the rows asked for only, and agrees with forward on them; truncate on a model
// with sliding-window layers refuses, as UNSUPPORTED, to go back past the rows they keep.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../models/model_fixture.hpp"
#include "engine/model_service.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"

using namespace specd;

namespace {

// The model service as a proposer on the CPU backend sees it.
class CpuModelService {
 public:
  CpuModelService() {
    run_.registry = &registry_;
    run_.default_backend = "cpu";
    run_.threads = 1;
    table_ = model_host_table(run_);
  }
  CpuModelService(const CpuModelService&) = delete;  // the table points at run_
  CpuModelService& operator=(const CpuModelService&) = delete;
  const specd_host* host() const { return &table_; }
  // Checks that a call succeeded, showing its message when it did not.
  void ok(specd_status* s) const {
    const std::string message = s ? status_message(s) : "";
    if (s) table_.status_free(table_.context, s);
    INFO(message);
    CHECK(s == nullptr);
  }

 private:
  PluginRegistry registry_;
  ModelRun run_;
  specd_host table_{};
};

}  // namespace

TEST_CASE("forward_rows gives the asked rows' logits only, equal to forward's") {
  const std::string dir = test::temp_dir("model-service");
  const std::string path = dir + "/draft.gguf";
  const uint32_t V = test::write_random_llama(path, {});
  CpuModelService service;
  const specd_host* host = service.host();
  const specd_model_api* api = host->models;
  REQUIRE(api->struct_size > offsetof(specd_model_api, forward_rows));
  REQUIRE(static_cast<bool>(api->forward_rows));
  auto ok = [&](specd_status* s) { service.ok(s); };

  specd_model* model = nullptr;
  ok(api->open(host->context, path.c_str(), "cpu", 1, &model));
  REQUIRE(model != nullptr);
  specd_model_cache *full = nullptr, *last = nullptr;
  ok(api->cache_create(host->context, model, 64, &full));
  ok(api->cache_create(host->context, model, 64, &last));

  const uint32_t m = 9;
  std::vector<specd_token> tokens(m);
  std::vector<int32_t> positions(m), parents(m);
  for (uint32_t i = 0; i < m; ++i) {
    tokens[i] = static_cast<specd_token>(3 + 7 * i);
    positions[i] = static_cast<int32_t>(i);
    parents[i] = static_cast<int32_t>(i) - 1;
  }
  std::vector<float> all(static_cast<size_t>(m) * V);
  ok(api->forward(host->context, model, full, tokens.data(), positions.data(), parents.data(), m,
                  all.data(), nullptr));
  // One row asked for, one row written: the guard row after it stays as it was.
  std::vector<float> one(2 * static_cast<size_t>(V), 42.0f);
  ok(api->forward_rows(host->context, model, last, tokens.data(), positions.data(), parents.data(),
                       m, m - 1, one.data(), nullptr));
  for (uint32_t v = 0; v < V; ++v) {
    CHECK(one[v] == all[static_cast<size_t>(m - 1) * V + v]);  // m <= 64: batch invariant
    CHECK(one[V + v] == 42.0f);
  }
  // None asked for: logits may be NULL.
  ok(api->forward_rows(host->context, model, last, tokens.data(), positions.data(), parents.data(),
                       m, m, nullptr, nullptr));
  // Past the rows: an error, not a crash.
  specd_status* past =
      api->forward_rows(host->context, model, last, tokens.data(), positions.data(), parents.data(),
                        m, m + 1, nullptr, nullptr);
  REQUIRE(past != nullptr);
  CHECK(std::string(status_message(past)).find("first_logit_row") != std::string::npos);
  host->status_free(host->context, past);

  api->cache_free(host->context, full);
  api->cache_free(host->context, last);
  api->close(host->context, model);
}

TEST_CASE("models are served through a proposer's host table only; a check run refuses them") {
  const std::string dir = test::temp_dir("model-service-refusals");
  const std::string path = dir + "/draft.gguf";
  test::write_random_llama(path, {});
  auto message = [](specd_status* s) {
    REQUIRE(s != nullptr);
    const std::string m = status_message(s);
    host_table()->status_free(nullptr, s);
    return m;
  };
  specd_model* model = nullptr;
  // The process-wide table (backends, rules, verifiers) serves no model.
  const specd_host* global = host_table();
  CHECK(global->context == nullptr);
  CHECK(message(global->models->open(nullptr, path.c_str(), "cpu", 1, &model))
            .find("served to proposers only") != std::string::npos);
  CHECK(model == nullptr);
  // A proposer's table whose run checks a configuration: refused, and recorded.
  ModelRun check;
  const specd_host table = model_host_table(check);
  CHECK(table.context == &check);
  CHECK(message(table.models->open(table.context, path.c_str(), "cpu", 1, &model))
            .find("not opened while checking a configuration") != std::string::npos);
  CHECK(check.refused_open);
  // The model service without the context its table carries.
  CHECK(
      message(table.models->open(nullptr, path.c_str(), "cpu", 1, &model)).find("host->context") !=
      std::string::npos);
}

TEST_CASE("truncate refuses, as unsupported, rows a sliding-window model gave back; 0 works") {
  test::FixtureSpec spec;
  spec.architecture = "gpt-oss";
  spec.head_dim = 32;
  const std::string path = test::write_fixture(spec, "service-gpt-oss.gguf");
  CpuModelService service;
  const specd_host* host = service.host();
  const specd_model_api* api = host->models;
  auto ok = [&](specd_status* s) { service.ok(s); };
  specd_model* model = nullptr;
  ok(api->open(host->context, path.c_str(), "cpu", 1, &model));
  REQUIRE(model != nullptr);
  specd_model_cache* cache = nullptr;
  ok(api->cache_create(host->context, model, 256, &cache));
  // 200 rows, 16 at a time: the window (8) and its slack (80) end far after row 40.
  for (int32_t at = 0; at < 200; at += 16) {
    const uint32_t m = static_cast<uint32_t>(std::min(16, 200 - at));
    std::vector<specd_token> tokens(m);
    std::vector<int32_t> positions(m), parents(m), rows(m);
    for (uint32_t i = 0; i < m; ++i) {
      tokens[i] = static_cast<specd_token>((at + 5 * i) % spec.vocab);
      positions[i] = at + static_cast<int32_t>(i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    ok(api->forward_rows(host->context, model, cache, tokens.data(), positions.data(),
                         parents.data(), m, m, nullptr, nullptr));
    ok(api->commit(host->context, model, cache, rows.data(), m));
  }
  specd_status* back = api->truncate(host->context, model, cache, 40);
  REQUIRE(back != nullptr);
  CHECK(host->status_code(host->context, back) == SPECD_STATUS_UNSUPPORTED);
  CHECK(std::string(status_message(back)).find("sliding-window") != std::string::npos);
  host->status_free(host->context, back);
  CHECK(api->cache_size(host->context, cache) == 200u);  // unchanged
  ok(api->truncate(host->context, model, cache, 180));   // within the slack
  ok(api->truncate(host->context, model, cache, 0));
  api->cache_free(host->context, cache);
  api->close(host->context, model);
}
