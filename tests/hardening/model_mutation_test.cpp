// Malformed model files in bulk. A valid target, draft and each kind of head file are
// rewritten once per mutation — every metadata key removed, retyped or set to a boundary
// value, every tensor removed, reshaped, retyped or filled with NaN — and each mutant goes
// through the engine as a user would load it. A mutant either still generates or is refused
// with a specd::Error that names the file; any other exception, a crash, or (in the
// sanitizer build) a memory or UB report fails the test. The files are generated, so the
// suite checks whatever the loaders will meet, not a list of cases someone thought of.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "random_heads.hpp"
#include "random_llama.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

// One rewrite of a file: a name for the report and an edit of the writer's inputs.
struct Mutation {
  std::string name;
  std::function<void(std::vector<std::pair<std::string, GgufValue>>&)> edit_metadata;
  std::function<void(std::vector<GgufTensor>&, std::vector<std::vector<uint8_t>>&)> edit_tensors;
  // A tensor the loader needs went missing or changed shape or type: no loader may miss it.
  bool must_be_refused = false;
};

GgufValue u32(uint32_t v) {
  return GgufValue::uint32(v);
}

// Boundary and wrong-type replacements for one metadata value.
std::vector<std::pair<std::string, GgufValue>> replacements(const GgufValue& v) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::pair<std::string, GgufValue>> out;
  if (v.is_integer()) {
    out = {{"0", u32(0)},
           {"1", u32(1)},
           {"u32 max", u32(0xFFFFFFFFu)},
           {"-1", GgufValue::int32(-1)},
           {"2^40", GgufValue::uint64(uint64_t(1) << 40)},
           {"a string", GgufValue::string("7")}};
    if (const auto n = v.as_int64(); n && *n >= 0 && *n < (1 << 20)) {
      out.push_back({"value + 1", GgufValue::int64(*n + 1)});
      out.push_back({"value * 2", GgufValue::int64(*n * 2)});
    }
  } else if (v.is_float()) {
    out = {{"NaN", GgufValue::float32(nan)},    {"inf", GgufValue::float32(inf)},
           {"0", GgufValue::float32(0.0f)},     {"-1", GgufValue::float32(-1.0f)},
           {"1e30", GgufValue::float32(1e30f)}, {"an integer", u32(3)}};
  } else if (v.type == GgufType::kString) {
    out = {{"empty", GgufValue::string("")},
           {"invalid UTF-8", GgufValue::string("\xff\xfe")},
           {"an integer", u32(1)}};
  } else if (v.type == GgufType::kBool) {
    out = {{"an integer", u32(7)}};
  } else if (v.type == GgufType::kArray) {
    const std::vector<GgufValue> items = v.elements();
    out.push_back({"empty array", GgufValue::make_array(v.elem_type, {})});
    out.push_back(
        {"first half",
         GgufValue::make_array(v.elem_type, {items.begin(), items.begin() + items.size() / 2})});
    out.push_back({"a scalar", u32(1)});
    if (!items.empty()) {
      std::vector<GgufValue> twice = items;
      twice.insert(twice.end(), items.begin(), items.end());
      out.push_back({"doubled", GgufValue::make_array(v.elem_type, twice)});
      std::vector<GgufValue> other(items.size(), GgufValue::float32(0.5f));
      if (v.elem_type == GgufType::kFloat32) other.assign(items.size(), GgufValue::string("x"));
      out.push_back({"other element type", GgufValue::make_array(other.front().type, other)});
      if (v.elem_type == GgufType::kString) {
        std::vector<GgufValue> edited = items;
        edited[items.size() / 2] = GgufValue::string("\xc3");
        edited[items.size() - 1] = GgufValue::string("");
        out.push_back({"invalid and empty strings", GgufValue::make_array(v.elem_type, edited)});
        edited = items;
        edited[items.size() - 1] = items[0];
        out.push_back({"a duplicate string", GgufValue::make_array(v.elem_type, edited)});
      } else if (gguf_is_integer(v.elem_type)) {
        std::vector<GgufValue> edited;
        for (const GgufValue& item : items)
          edited.push_back(GgufValue::int32(static_cast<int32_t>(item.as_int64().value_or(0))));
        edited[0] = GgufValue::int32(-5);
        edited[items.size() - 1] = GgufValue::int32(1 << 30);
        out.push_back({"out-of-range integers", GgufValue::make_array(GgufType::kInt32, edited)});
      }
    }
  }
  return out;
}

std::vector<Mutation> mutations_of(const GgufFile& file) {
  std::vector<Mutation> out;
  const auto& kv = file.metadata();
  for (size_t i = 0; i < kv.size(); ++i) {
    const std::string key = kv[i].first;
    if (key == "general.alignment") continue;  // the reader's concern, fuzzed on its own
    out.push_back({"metadata " + key + " removed",
                   [i](auto& m) { m.erase(m.begin() + static_cast<std::ptrdiff_t>(i)); },
                   {}});
    for (auto& [what, value] : replacements(kv[i].second))
      out.push_back({"metadata " + key + " = " + what,
                     [i, value = value](auto& m) { m[i].second = value; },
                     {}});
  }
  const auto& tensors = file.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensor& t = tensors[i];
    const auto at = static_cast<std::ptrdiff_t>(i);
    // output.weight may go: llama.cpp's convention ties the output to the embedding then;
    // so may llama's rope_freqs.weight (Llama 3.1 without it is plain llama rope), and an
    // MTP layer's shared_head_norm (its head then normalises with output_norm).
    const bool optional = t.name == "output.weight" || t.name == "rope_freqs.weight" ||
                          t.name.find(".nextn.shared_head_norm.") != std::string::npos;
    out.push_back({"tensor " + t.name + " removed",
                   {},
                   [at](auto& ts, auto& data) {
                     ts.erase(ts.begin() + at);
                     data.erase(data.begin() + at);
                   },
                   !optional});
    out.push_back({"tensor " + t.name + " filled with NaN", {}, [i](auto&, auto& data) {
                     std::memset(data[i].data(), 0xFF, data[i].size());
                   }});
    out.push_back({"tensor " + t.name + " as f32 zeros", {}, [i](auto& ts, auto& data) {
                     ts[i].type = GgmlType::kF32;
                     data[i].assign(static_cast<size_t>(ts[i].n_elements) * 4, 0);
                   }});
    if (t.ne[0] % 32 == 0)
      out.push_back({"tensor " + t.name + " as q8_1 (unsupported)",
                     {},
                     [i](auto& ts, auto& data) {
                       ts[i].type = GgmlType::kQ8_1;
                       data[i].assign(ggml_row_size(GgmlType::kQ8_1, ts[i].ne[0]) *
                                          static_cast<size_t>(ts[i].n_elements / ts[i].ne[0]),
                                      0);
                     },
                     true});
    if (t.n_dims == 2) {
      if (t.ne[0] != t.ne[1])  // a square matrix transposed has the same shape
        out.push_back({"tensor " + t.name + " transposed",
                       {},
                       [i](auto& ts, auto&) { std::swap(ts[i].ne[0], ts[i].ne[1]); },
                       true});
      out.push_back({"tensor " + t.name + " flattened", {}, [i](auto& ts, auto&) {
                       ts[i].ne = {ts[i].n_elements, 1, 1, 1};
                       ts[i].n_dims = 1;
                     }});
      if (t.ne[1] > 1)
        out.push_back({"tensor " + t.name + " missing its last row",
                       {},
                       [i](auto& ts, auto& data) {
                         ts[i].ne[1] -= 1;
                         data[i].resize(data[i].size() / static_cast<size_t>(ts[i].ne[1] + 1) *
                                        static_cast<size_t>(ts[i].ne[1]));
                       },
                       true});
    } else {
      out.push_back({"tensor " + t.name + " as a 2-d tensor", {}, [i](auto& ts, auto&) {
                       ts[i].ne = {1, ts[i].n_elements, 1, 1};
                       ts[i].n_dims = 2;
                     }});
    }
  }
  return out;
}

// Writes `src` with `m` applied to `path`.
void write_mutant(const GgufFile& src, const Mutation& m, const std::string& path) {
  auto kv = src.metadata();
  std::vector<GgufTensor> tensors = src.tensors();
  std::vector<std::vector<uint8_t>> data;
  for (const GgufTensor& t : tensors) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    data.emplace_back(p, p + t.n_bytes);
  }
  if (m.edit_metadata) m.edit_metadata(kv);
  if (m.edit_tensors) m.edit_tensors(tensors, data);
  GgufWriter w;
  for (auto& [key, value] : kv) w.set(key, value);
  for (size_t i = 0; i < tensors.size(); ++i)
    w.add_tensor(tensors[i].name, tensors[i].type,
                 {tensors[i].ne.begin(), tensors[i].ne.begin() + tensors[i].n_dims}, data[i]);
  w.write(path);
}

struct Tally {
  int generated = 0;
  int refused = 0;
};

// Loads the engine with `overrides` (the mutant's path among them) and generates a few
// tokens; the mutant passes if that works or fails with a specd::Error naming `path`.
void run_mutant(const PluginRegistry& registry, const std::vector<std::string>& overrides,
                const std::string& path, Tally& tally) {
  std::vector<std::string> all = {"engine.backend=cpu", "engine.threads=1",
                                  "sampling.temperature=0", "sampling.ignore_eos=true",
                                  "sampling.max_tokens=3"};
  all.insert(all.end(), overrides.begin(), overrides.end());
  const Config config = parse_config("", "mutation.toml", all);
  try {
    Engine engine(config, registry);
    const GenerationResult out = engine.generate("def f(x):");
    CHECK(out.tokens.size() == 3);
    ++tally.generated;
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO("error: ", what);
    CHECK(what.find(path) != std::string::npos);
    ++tally.refused;
  }
}

// Mutates `original` every way there is and runs each mutant with `overrides_for(path)`.
void sweep(const std::string& dir, const std::string& original,
           const std::function<std::vector<std::string>(const std::string&)>& overrides_for) {
  PluginRegistry registry{{}};
  // The unmutated file must generate, or the sweep would only measure its refusal.
  Tally baseline;
  run_mutant(registry, overrides_for(original), original, baseline);
  REQUIRE(baseline.generated == 1);

  const GgufFile src = GgufFile::open(original);
  const std::string path = dir + "/mutant.gguf";
  Tally tally;
  int must_refuse = 0;
  for (const Mutation& m : mutations_of(src)) {
    CAPTURE(m.name);
    write_mutant(src, m, path);
    const int refused_before = tally.refused;
    run_mutant(registry, overrides_for(path), path, tally);
    if (m.must_be_refused) {
      ++must_refuse;
      CHECK(tally.refused == refused_before + 1);
    }
  }
  MESSAGE(original, ": ", tally.generated + tally.refused, " mutants, ", tally.refused,
          " refused with an error naming the file, ", tally.generated, " still generate (",
          must_refuse, " had to be refused)");
}

struct Files {
  std::string dir = test::temp_dir("model-mutation");
  std::string target = dir + "/target.gguf";
  std::string draft = dir + "/draft.gguf";
  Files() {
    test::RandomLlamaSpec t;
    test::write_random_llama(target, t);
    test::RandomLlamaSpec d;
    d.n_layer = 1;
    d.seed = 2;
    test::write_random_llama(draft, d);
  }
};

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

}  // namespace

TEST_CASE("every mutation of a target file generates or is refused naming the file") {
  Files f;
  sweep(f.dir, f.target,
        [](const std::string& p) { return std::vector<std::string>{"target.model=" + quoted(p)}; });
}

TEST_CASE("every mutation of qwen2, qwen3, phi3 and rope_freqs llama targets is handled") {
  Files f;
  for (const std::string arch : {"qwen2", "qwen3", "phi3", "llama"}) {
    CAPTURE(arch);
    test::RandomLlamaSpec t;
    t.architecture = arch;
    t.rope_freqs = arch == "llama";
    if (arch == "qwen3") t.head_dim = 32;
    const std::string target = f.dir + "/" + arch + "-target.gguf";
    test::write_random_llama(target, t);
    sweep(f.dir, target, [](const std::string& p) {
      return std::vector<std::string>{"target.model=" + quoted(p)};
    });
  }
}

TEST_CASE("every mutation of a qwen35 hybrid target and its MTP layer is handled") {
  // The recurrent layers' tensors and keys (conv kernel, ssm_*, attn_gate, the DeltaNet
  // widths, full_attention_interval), the gated attention's, and the MTP layer's, as a target
  // and as the drafter the target file carries.
  Files f;
  test::RandomLlamaSpec t;
  t.architecture = "qwen35";
  t.n_layer = 4;
  t.head_dim = 16;
  t.rope_dim = 8;
  const std::string target = f.dir + "/qwen35-target.gguf";
  test::write_random_llama(target, t);
  // Under the sanitizers the sweep with the MTP layer below loads every one of these
  // tensors and keys too (and runs the drafter): the plain build runs both.
  if (!SPECD_SANITIZED)
    sweep(f.dir, target, [](const std::string& p) {
      return std::vector<std::string>{"target.model=" + quoted(p)};
    });
  // With its MTP layer, which the trunk does not read but the drafter does.
  t.n_nextn = 1;
  const std::string with_mtp = f.dir + "/qwen35-mtp.gguf";
  test::write_random_llama(with_mtp, t);
  sweep(f.dir, with_mtp, [](const std::string& p) {
    return std::vector<std::string>{"target.model=" + quoted(p), "proposer.kind=\"mtp\"",
                                    "proposer.k=2"};
  });
}

TEST_CASE("every mutation of a draft model generates or is refused naming the file") {
  Files f;
  sweep(f.dir, f.draft, [&](const std::string& p) {
    return std::vector<std::string>{"target.model=" + quoted(f.target),
                                    "proposer.kind=\"draft-model\"", "proposer.k=3",
                                    "proposer.model=" + quoted(p)};
  });
}

TEST_CASE("every mutation of a head file generates or is refused naming the file") {
  Files f;
  const std::vector<std::pair<std::string, decltype(&test::write_random_medusa)>> heads = {
      {"medusa", &test::write_random_medusa},
      {"eagle", &test::write_random_eagle},
      {"mtp", &test::write_random_mtp}};
  for (const auto& [kind, write] : heads) {
    CAPTURE(kind);
    const std::string head = f.dir + "/" + kind + ".gguf";
    write(head, f.target, {});
    sweep(f.dir, head, [&, kind = kind](const std::string& p) {
      return std::vector<std::string>{"target.model=" + quoted(f.target),
                                      "proposer.kind=" + quoted(kind),
                                      "proposer.model=" + quoted(p)};
    });
  }
}
