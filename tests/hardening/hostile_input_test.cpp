// The real `specd` binary over inputs built to break it (issue #15, second round): files
// that nest too deeply, special files where a model or prompt belongs, values just outside
// their ranges, parameters only a plugin can check. Each case states the exit status and a
// piece of the message, as bad_input_test does, and every one runs in well under a second.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli_cases.hpp"
#include "cli_runner.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf_rewrite.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

using test::write_text;

std::string repeat(const std::string& part, const std::string& sep, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? sep : "") + part;
  return out;
}

struct Files {
  std::string dir = test::temp_dir("hostile-input");
  std::string model = dir + "/random.gguf";
  std::string good = dir + "/good.toml";
  std::string out = dir + "/out";
  // 264 embedding rows, 258 tokens: the last 6 rows are padding without a token.
  std::string padded = dir + "/padded.gguf";

  Files() {
    test::write_random_llama(model, test::RandomLlamaSpec{});
    write_text(good, config_for(model));
    test::rewrite_gguf(model, padded, [](const GgufFile& f, GgufWriter& w) {
      for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}) {
        std::vector<GgufValue> kept = f.get_array(key).elements();
        kept.resize(258);
        w.set(key, GgufValue::make_array(kept.front().type, kept));
      }
    });
  }

  static std::string config_for(const std::string& model, const std::string& extra = "") {
    return test::cli_config(model, "", extra);
  }

  // Writes `text` to a file named `name` in the test folder and returns its path.
  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = dir + "/" + name;
    write_text(path, text);
    return path;
  }

  // `check-config` of `text`, written to a file named `name`.
  std::vector<std::string> check_config(const std::string& name, const std::string& text) const {
    return {"check-config", file(name, text)};
  }
};

const Files& files() {
  static Files f;
  return f;
}

using Case = test::CliCase;

// Item 1: nesting that would overflow the TOML parser's stack (50 000 levels, ~100 KB).
std::vector<Case> nesting_cases() {
  const Files& f = files();
  const std::string deep_key = repeat("a", ".", 50000) + " = 1\n";
  std::string deep_header = "[", deep_array = "x = ", deep_inline = "x = ";
  deep_header += repeat("a", ".", 50000) + "]\n";
  deep_array += std::string(50000, '[') + std::string(50000, ']');
  deep_inline += repeat("{a=", "", 20000) + "1" + std::string(20000, '}');
  const std::string needle = "nested deeper than 128 levels";
  // Dots and brackets inside strings and numbers are not nesting.
  const std::string shallow = Files::config_for(
      f.model, "stop = [\"" + repeat("[a.b]", "", 400) + "\", '" + repeat("{x.y", "", 400) +
                   "']\n\n[proposer]\nkind = \"none\"\n\"" + repeat("z", ".", 300) +
                   "\" = [1.5, 2.5, 3.5]\n");
  return {
      {"check-config: deep table header", f.check_config("deep-header.toml", deep_header), 2,
       "deep-header.toml:1:"},
      {"check-config: deep dotted key", f.check_config("deep-key.toml", deep_key), 2, needle},
      {"run: deep dotted key",
       {"run", "-c", f.file("deep-key-run.toml", Files::config_for(f.model) + deep_key), "-p", "x"},
       2,
       "deep-key-run.toml:12:"},
      {"run: deep arrays",
       {"run", "-c", f.file("deep-array.toml", deep_array), "-p", "x"},
       2,
       needle},
      {"run: deep inline tables",
       {"run", "-c", f.file("deep-inline.toml", deep_inline), "-p", "x"},
       2,
       needle},
      {"--set carrying a deep key",
       {"check-config", f.good, "--set", "engine.x=1\n" + deep_key},
       2,
       "--set engine.x: the value nests deeper than 128 levels"},
      {"bench: deep bench file",
       {"bench", "-c", f.file("deep-bench.toml", deep_header), "--out", f.out},
       2,
       needle},
      {"audit: deep Markov table",
       {"audit", "--markov", f.file("deep-markov.toml", deep_key)},
       2,
       needle},
      {"dots and brackets inside strings are not nesting", f.check_config("shallow.toml", shallow),
       0, "ok"},
  };
}

// Item 3: audit draft trees bounded as chains are (their enumeration grows as vocab^nodes).
std::vector<Case> audit_tree_cases() {
  const std::vector<std::string> rule = {"audit", "--rule", "tree-rejection", "--samples", "200"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = rule;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  return {
      {"--tree 8,8,8,8,8,8 (unbounded recursion before)", with({"--tree", "8,8,8,8,8,8"}), 2,
       "--tree 8,8,8,8,8,8 makes 299592 draft nodes"},
      {"--tree 2,2,2 (minutes before)", with({"--tree", "2,2,2"}), 2, "at most 8 nodes"},
      {"--tree 8,8 (minutes before)", with({"--tree", "8,8"}), 2, "makes 72 draft nodes"},
      {"--tree 2,2 within the bound works", with({"--tree", "2,2"}), 0, "trees 2,2"},
      {"--k 9", with({"--k", "9"}), 2, "--k must be at most 8"},
  };
}

// Item 2: command-line values are checked like configuration values.
std::vector<Case> cli_value_cases() {
  const Files& f = files();
  auto construct = [&](const std::string& agreement) {
    return std::vector<std::string>{"bench",       "--construct", "--out", f.dir + "/constructed",
                                    "--agreement", agreement};
  };
  return {
      {"--agreement -0.01 (SIGBUS before)", construct("-0.01"), 2,
       "option --agreement -0.01 must lie in [0, 1]"},
      {"--agreement 2 (\"agreeing on 200%\" before)", construct("2"), 2, "must lie in [0, 1]"},
      {"--agreement nan", construct("nan"), 2, "option --agreement needs a finite number"},
      {"--agreement inf", construct("inf"), 2, "option --agreement needs a finite number"},
      {"--agreement 0.5 works", construct("0.5"), 0, "draft agreeing on 50% of the map"},
      {"audit --alpha nan", {"audit", "--alpha", "nan"}, 2, "needs a finite number"},
  };
}

// Constructed mixtures of experts: sizes and architectures that do not go together are
// refused before anything is written; the tiny qwen3moe in mxfp4_moe is written with its
// dense llama drafts.
std::vector<Case> constructed_moe_cases() {
  const Files& f = files();
  auto construct = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"bench", "--construct", "--out", f.dir + "/constructed-moe"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  return {
      {"--size moe-3b with the default llama", construct({"--size", "moe-3b"}), 2,
       "size 'moe-3b' is a mixture of experts: it needs the architecture qwen3moe"},
      {"--arch qwen3moe --size 0.5b", construct({"--arch", "qwen3moe", "--size", "0.5b"}), 2,
       "size '0.5b' is a dense shape; --arch qwen3moe (a mixture of experts) takes tiny, moe-3b"},
      {"--draft-size moe-3b", construct({"--arch", "qwen3moe", "--draft-size", "moe-3b"}), 2,
       "constructed drafts are dense llama models: draft size 'moe-3b' is a mixture of experts"},
      {"--arch mixtral", construct({"--arch", "mixtral"}), 2,
       "unknown constructed architecture 'mixtral' (llama, qwen35, qwen3moe, gpt-oss)"},
      {"--arch qwen3moe --size tiny --type mxfp4_moe works",
       construct({"--arch", "qwen3moe", "--size", "tiny", "--type", "mxfp4_moe"}), 0,
       "target.gguf  (qwen3moe tiny mxfp4_moe, 2.2 M parameters, 1.1 M active"},
      {"--arch gpt-oss --size tiny --type mxfp4_moe works",
       construct({"--arch", "gpt-oss", "--size", "tiny", "--type", "mxfp4_moe"}), 0,
       "target.gguf  (gpt-oss tiny mxfp4_moe"},
  };
}

// Items 4 and 9: special files where a model, a configuration or a prompt belongs. Before,
// a FIFO blocked the open forever and a directory as prompt file generated from nothing.
std::vector<Case> special_file_cases() {
  const Files& f = files();
  const std::string fifo = f.dir + "/fifo";
  mkfifo(fifo.c_str(), 0600);
  const std::string draft = "[proposer]\nkind = \"draft-model\"\nk = 3\nmodel = \"";
  return {
      {"FIFO as target.model",
       {"run", "-c", f.file("fifo-target.toml", Files::config_for(fifo)), "-p", "x"},
       2,
       "fifo-target.toml:6:9: '" + fifo + "' is a FIFO, not a regular file (target.model"},
      {"FIFO as proposer.model",
       {"run", "-c", f.good, "-p", "x", "--set", "proposer.kind=draft-model", "--set",
        "proposer.model=\"" + fifo + "\""},
       2,
       "--set proposer.model: '" + fifo + "' is a FIFO"},
      {"FIFO as proposer.model in the file",
       {"run", "-c", f.file("fifo-draft.toml", Files::config_for(f.model, draft + fifo + "\"\n")),
        "-p", "x"},
       2,
       "fifo-draft.toml:15:9: '" + fifo + "' is a FIFO"},
      {"directory as target.model",
       {"run", "-c", f.file("dir-target.toml", Files::config_for(f.dir)), "-p", "x"},
       2,
       "is a directory, not a regular file (target.model"},
      {"FIFO without a writer as prompt file",
       {"run", "-c", f.good, "-f", fifo},
       2,
       fifo + ": prompt file is a FIFO and nothing was written to it"},
      {"FIFO without a writer as configuration",
       {"check-config", fifo},
       2,
       fifo + ": configuration file is a FIFO"},
      {"directory as prompt file (generated from an empty prompt before)",
       {"run", "-c", f.good, "-f", f.dir},
       2,
       f.dir + ": prompt file is a directory"},
      {"directory as Markov table", {"audit", "--markov", f.dir}, 2, "Markov table is a directory"},
      {"prompt file read through /dev/stdin works",
       {"run", "-c", f.good, "-f", "/dev/stdin"},
       0,
       "tokens"},
  };
}

// Item 10: one set of range checks, applied when the configuration is loaded, located.
std::vector<Case> range_cases() {
  const Files& f = files();
  return {
      {"check-config: subnormal temperature",
       f.check_config("subnormal.toml", "[sampling]\ntemperature = 1e-310\n"), 2,
       "subnormal.toml:2:15: 'temperature' = 1e-310 is out of range (0 = greedy, else a finite "
       "number >= 1e-06)"},
      {"run: subnormal temperature with --set",
       {"run", "-c", f.good, "-p", "x", "--set", "sampling.temperature=1e-310"},
       2,
       "--set sampling.temperature: 'temperature' = 1e-310 is out of range"},
      {"check-config: temperature = inf",
       f.check_config("inf.toml", "[sampling]\ntemperature = inf\n"), 2,
       "inf.toml:2:15: 'temperature' = inf is out of range"},
      {"check-config: temperature = nan",
       f.check_config("nan.toml", "[sampling]\ntemperature = nan\n"), 2,
       "nan.toml:2:15: 'temperature'"},
      {"check-config: threads = 1000", f.check_config("threads.toml", "[engine]\nthreads = 1000\n"),
       2, "threads.toml:2:11: 'threads' = 1000 is out of range (0 = all cores, up to 256)"},
      {"check-config: min_p = 1", f.check_config("min-p.toml", "[sampling]\nmin_p = 1.0\n"), 2,
       "min-p.toml:2:9: 'min_p' = 1 is out of range"},
      {"temperature 1e-6 works",
       {"run", "-c", f.good, "-p", "x", "--set", "sampling.temperature=1e-6"},
       0,
       "tokens"},
  };
}

// Item 11: values that were silently truncated or accepted.
std::vector<Case> silent_value_cases() {
  const Files& f = files();
  const std::string bench = f.file("bench.toml", "[bench]\ntasks = [\"none\"]\n");
  // The draft holds 24 tokens of context; the target 256.
  test::RandomLlamaSpec short_spec;
  short_spec.n_ctx = 24;
  const std::string short_draft = f.dir + "/short-context-draft.gguf";
  test::write_random_llama(short_draft, short_spec);
  return {
      {"NUL escape in a string (loaded the truncated path before)",
       {"check-config",
        f.file("nul.toml", "[target]\nmodel = \"" + f.model + "\\u0000/../x.gguf\"\n")},
       2,
       "nul.toml:2:9: a NUL character (\\u0000) in a string"},
      {"NUL escape in a key", f.check_config("nul-key.toml", "[proposer]\n\"a\\u0000b\" = 1\n"), 2,
       "nul-key.toml:2:1: a NUL character"},
      {"NUL in a --set value",
       {"check-config", f.good, "--set", "target.model=\"x\\u0000y\""},
       2,
       "--set target.model: the value holds a NUL character"},
      {"a draft whose context is shorter than the sequence says so",
       {"run", "-c", f.good, "-p", "abcdefghij", "-n", "30", "--set", "proposer.kind=draft-model",
        "--set", "proposer.model=\"" + short_draft + "\""},
       0,
       "holds 24 tokens of context and the sequence has reached"},
      {"bench --repeats 0",
       {"bench", "-c", bench, "--out", f.out, "--repeats", "0"},
       2,
       "option --repeats must be at least 1"},
      {"bench --repeats -5",
       {"bench", "-c", bench, "--out", f.out, "--repeats", "-5"},
       2,
       "option --repeats must be at least 1"},
      {"bench --prompts 0",
       {"bench", "-c", bench, "--out", f.out, "--prompts", "0"},
       2,
       "option --prompts must be at least 1"},
      {"bench: [bench] repeats = -5 in the file",
       {"bench", "-c", f.file("bench-neg.toml", "[bench]\ntasks = [\"none\"]\nrepeats = -5\n"),
        "--out", f.out},
       2,
       "[bench] repeats = -5 is out of range"},
      {"bench: [bench] max_tokens = -1 in the file",
       {"bench", "-c",
        f.file("bench-neg-tokens.toml", "[bench]\ntasks = [\"none\"]\nmax_tokens = -1\n"), "--out",
        f.out},
       2,
       "[bench] max_tokens = -1 is out of range"},
      {"audit --samples past 2^64",
       {"audit", "--samples", "18446744073709551616"},
       2,
       "option --samples 18446744073709551616 is too large"},
      {"audit --samples 0", {"audit", "--samples", "0"}, 2, "option --samples must be at least 1"},
      {"audit --samples +5", {"audit", "--samples", "+5"}, 2, "needs a non-negative integer"},
      {"audit --min-p 1", {"audit", "--min-p", "1"}, 2, "min_p = 1 is out of range"},
  };
}

// Item 20: check-config runs the plugins' checks, so that what it calls ok, run accepts.
std::vector<Case> plugin_check_cases() {
  const Files& f = files();
  const std::string shipped_ngram = std::string(SPECD_SOURCE_DIR) + "/configs/ngram.toml";
  auto check = [&](std::vector<std::string> sets) {
    std::vector<std::string> a = {"check-config", f.good};
    for (const std::string& s : sets) a.insert(a.end(), {"--set", s});
    return a;
  };
  const std::string draft = "proposer.model=\"" + f.model + "\"";
  return {
      {"the shipped ngram config with an unknown proposer key",
       {"check-config", shipped_ngram, "--set", "proposer.bogus=1"},
       2,
       "--set proposer.bogus: unknown key 'bogus' (known: max_n, min_n)"},
      {"an unknown acceptance rule", check({"proposer.kind=ngram", "acceptance.rule=nope"}), 2,
       "--set acceptance.rule: unknown acceptance plugin 'nope'"},
      {"a proposer parameter out of its choices (checked before the model is opened)",
       check({"proposer.kind=draft-model", draft, "proposer.mode=fast"}), 2,
       "--set proposer.mode: key 'mode' must be one of"},
      {"an acceptance parameter the rule does not take",
       check({"proposer.kind=draft-model", draft, "acceptance.bogus=1"}), 2,
       "--set acceptance.bogus: unknown key 'bogus'"},
      {"a lossy rule without allow_lossy",
       check({"proposer.kind=ngram", "acceptance.rule=typical"}), 2,
       "--set acceptance.rule: rule 'typical' is lossy"},
      {"a rule needing q with a deterministic proposer",
       check({"proposer.kind=ngram", "acceptance.rule=rejection"}), 2,
       "needs the draft distributions q"},
      {"a good ngram configuration is ok", check({"proposer.kind=ngram", "proposer.max_n=3"}), 0,
       "ok"},
      {"a good draft-model configuration is ok",
       check({"proposer.kind=draft-model", draft, "proposer.mode=greedy"}), 0, "ok"},
  };
}

// Item 8: a target (or draft) whose tokenizer is smaller than its embedding never draws a
// padding id (before, the target sampled one and the run aborted mid-generation).
std::vector<Case> padding_cases() {
  const Files& f = files();
  const std::string config = f.file(
      "padded.toml", "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \"" + f.padded +
                         "\"\n\n[sampling]\ntemperature = 1.5\nignore_eos = true\n");
  std::vector<Case> cases;
  // 200 tokens per seed, each with a ~2% chance of a padding id when they are not masked.
  for (const char* seed : {"1", "2", "3"})
    cases.push_back({std::string("padded target, seed ") + seed,
                     {"run", "-c", config, "-p", "x", "-n", "200", "--seed", seed, "--json"},
                     0,
                     "\"stop_reason\":\"length\""});
  // The same file as draft: with padding masked in q as in p, q equals p and the exact rule
  // accepts every drafted token.
  cases.push_back(
      {"padded draft",
       {"run", "-c", config, "-p", "x", "-n", "100", "--json", "--set", "proposer.kind=draft-model",
        "--set", "proposer.model=\"" + f.padded + "\"", "--set", "proposer.k=3"},
       0,
       "\"acceptance_rate\":1,"});
  return cases;
}

// Issue #39: unbounded special files, line breaks in --set, [server] values check-config
// passed, a context of 1, duplicate token texts.
std::vector<Case> third_round_cases() {
  const Files& f = files();
  const std::string fifo = f.dir + "/fifo";
  mkfifo(fifo.c_str(), 0600);
  // A copy of token 100's text at id 101: every such piece of a prompt would become 101.
  const std::string duplicated = f.dir + "/duplicated.gguf";
  test::rewrite_gguf(f.model, duplicated, [](const GgufFile& file, GgufWriter& w) {
    std::vector<GgufValue> tokens = file.get_array("tokenizer.ggml.tokens").elements();
    tokens[101] = tokens[100];
    w.set("tokenizer.ggml.tokens", GgufValue::make_array(tokens.front().type, tokens));
  });
  auto server = [&](const std::string& name, const std::string& keys) {
    return f.file(name, Files::config_for(f.model, "\n[server]\n" + keys));
  };
  return {
      {"check-config /dev/zero (grew to gigabytes before)",
       {"check-config", "/dev/zero"},
       2,
       "/dev/zero: configuration file is a character device, not a file"},
      {"run -f /dev/zero", {"run", "-c", f.good, "-f", "/dev/zero"}, 2, "character device"},
      {"audit --markov /dev/urandom",
       {"audit", "--markov", "/dev/urandom"},
       2,
       "/dev/urandom: Markov table is a character device"},
      {"--set with a line break and a table after it (applied in part before)",
       {"check-config", f.good, "--set", "engine.seed=1\n[plugins]\npaths=[\"" + f.dir + "\"]"},
       2,
       "--set engine.seed: the value holds more than one TOML value"},
      {"--set with a line break in a bare string",
       {"check-config", f.good, "--set", "server.api_key=ab\ncd"},
       2,
       "--set server.api_key: the value holds a line break"},
      {"engine.context = 1 (a runtime error with backwards advice before)",
       f.check_config("context-1.toml", "[engine]\ncontext = 1\n"), 2,
       "context-1.toml:2:11: 'context' = 1 leaves no room to generate"},
      {"check-config: unknown [server] chat_template (ok before)",
       {"check-config", server("template-name.toml", "chat_template = \"no-such\"\n")},
       2,
       "unknown chat template 'no-such'"},
      {"check-config: a chat_template_file that does not exist (ok before)",
       {"check-config", server("template-missing.toml", "chat_template_file = \"/nonexistent\"\n")},
       2,
       "/nonexistent: cannot open chat template file"},
      {"check-config: a FIFO as chat_template_file (serve hung before)",
       {"check-config", server("template-fifo.toml", "chat_template_file = \"" + fifo + "\"\n")},
       2,
       fifo + ": chat template file is a FIFO"},
      {"check-config: a directory as chat_template_file",
       {"check-config", server("template-dir.toml", "chat_template_file = \"" + f.dir + "\"\n")},
       2,
       "chat template file is a directory"},
      {"check-config: host with a space (ok before)",
       {"check-config", server("host.toml", "host = \" 127.0.0.1\"\n")},
       2,
       "host ' 127.0.0.1' is not an address or a name"},
      {"a vocabulary with two tokens spelled alike (wrong ids before)",
       {"run", "-c", f.file("duplicated.toml", Files::config_for(duplicated)), "-p", "x"},
       1,
       "tokens 100 and 101 are both"},
  };
}

void run_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    CAPTURE(c.name);
    // Cases that hung before (a blocking open, minutes of enumeration) end as a failure,
    // never as a hung test: `timeout` kills them after a generous minute (status 124).
    std::vector<std::string> argv;
    if (test::on_path("timeout")) argv = {"timeout", "60"};
    argv.push_back(SPECD_CLI);
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    test::CliResult r = test::run_program(argv, "def");
    test::check_cli_result(c, r, {"specd: error: ", "specd audit: error: "});
  }
}

}  // namespace

TEST_CASE("TOML nesting deep enough to overflow the parser is refused before parsing") {
  run_cases(nesting_cases());
}

TEST_CASE("audit draft trees are bounded like chains, with a clear error") {
  run_cases(audit_tree_cases());
}

TEST_CASE("command-line values are validated like configuration values") {
  run_cases(cli_value_cases());
  run_cases(constructed_moe_cases());
}

TEST_CASE("special files as model, configuration or prompt: refused without blocking") {
  run_cases(special_file_cases());
}

TEST_CASE("sampling and engine ranges are checked at load time, with file:line:col") {
  run_cases(range_cases());
}

TEST_CASE("values that were silently truncated or accepted are refused; a stalled draft says so") {
  run_cases(silent_value_cases());
}

TEST_CASE("check-config runs the plugins' parameter checks that run would") {
  run_cases(plugin_check_cases());
}

TEST_CASE("third round: special files, --set line breaks, [server] checks, duplicate tokens") {
  run_cases(third_round_cases());
}

TEST_CASE("padding rows of the embedding are never drawn, by the target or a draft") {
  run_cases(padding_cases());
}
