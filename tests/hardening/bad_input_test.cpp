// The real `specd` binary over a table of bad inputs. Each case states the exact exit
// status (0 ok, 1 runtime error, 2 usage error: cli/main.cpp) and a piece of the message,
// so that a user who gets it wrong learns what to fix. A few good inputs that look bad
// (invalid UTF-8, an empty prompt with BOS) are in the table too: they must work.
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
#include "test_skip.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

using test::write_text;

// Every file the table needs, written once.
struct Files {
  std::string dir = test::temp_dir("bad-input");
  std::string model = dir + "/random.gguf";                 // byte-level BPE, adds BOS
  std::string no_bos = dir + "/no-bos.gguf";                // the same without BOS
  std::string gptneox = dir + "/gptneox.gguf";              // general.architecture = "gptneox"
  std::string truncated = dir + "/truncated.gguf";          // cut inside the tensor data
  std::string text_model = dir + "/not-a-model.gguf";       // a text file
  std::string draft_bigger = dir + "/draft-bigger.gguf";    // 4 more padding tokens
  std::string draft_extra = dir + "/draft-extra.gguf";      // ... the last one a real token
  std::string draft_renamed = dir + "/draft-renamed.gguf";  // same size, one token differs
  std::string good = dir + "/good.toml";
  std::string unreadable = dir + "/unreadable.toml";
  std::string folder = dir + "/a-folder.toml";

  Files() {
    test::RandomLlamaSpec spec;
    test::write_random_llama(model, spec);
    test::rewrite_gguf(model, no_bos, [](const GgufFile&, GgufWriter& w) {
      w.set_bool("tokenizer.ggml.add_bos_token", false);
    });
    test::rewrite_gguf(model, gptneox, [](const GgufFile&, GgufWriter& w) {
      w.set_string("general.architecture", "gptneox");
    });
    {
      std::ifstream in(model, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      write_text(truncated, bytes.substr(0, bytes.size() - bytes.size() / 3));
    }
    write_text(text_model, "this is not a model\n");
    test::RandomLlamaSpec bigger = spec;
    bigger.vocab += 4;
    bigger.seed = 2;
    test::write_random_llama(draft_bigger, bigger);
    test::rewrite_gguf(draft_bigger, draft_extra, [](const GgufFile& f, GgufWriter& w) {
      std::vector<GgufValue> tokens = f.get_array("tokenizer.ggml.tokens").elements();
      std::vector<GgufValue> types = f.get_array("tokenizer.ggml.token_type").elements();
      tokens.back().str = "zz";
      types.back().i = 1;  // normal
      w.set("tokenizer.ggml.tokens", GgufValue::make_array(GgufType::kString, tokens));
      w.set("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::kInt32, types));
    });
    test::rewrite_gguf(model, draft_renamed, [](const GgufFile& f, GgufWriter& w) {
      std::vector<GgufValue> tokens = f.get_array("tokenizer.ggml.tokens").elements();
      tokens.back().str = "[RENAMED]";
      w.set("tokenizer.ggml.tokens", GgufValue::make_array(GgufType::kString, tokens));
    });
    write_text(good, test::cli_config(model));
    write_text(unreadable, test::cli_config(model));
    chmod(unreadable.c_str(), 0);
    mkdir(folder.c_str(), 0755);
  }

  // Writes a config file named `name` and returns its path.
  std::string config(const std::string& name, const std::string& text) const {
    std::string path = dir + "/" + name + ".toml";
    write_text(path, text);
    return path;
  }
};

const Files& files() {
  static Files f;
  return f;
}

using Case = test::CliCase;

std::vector<Case> cases() {
  const Files& f = files();
  // ngram drafts with the greedy rule, sampled at 0.7 (line 12, the value at column 15);
  // [acceptance] comes last, so that a case can add allow_lossy.
  const std::string greedy_hot =
      "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \"" + f.model +
      "\"\n\n[proposer]\nkind = \"ngram\"\n\n[sampling]\n"
      "temperature = 0.7\nmax_tokens = 4\n\n[acceptance]\n"
      "rule = \"greedy\"\n";
  std::string greedy_default = greedy_hot;
  greedy_default.replace(greedy_default.find("temperature = 0.7\n"), 18, "");
  // A bench file: one prompt, the greedy rule at 0.7 (its arm table comes last).
  write_text(f.dir + "/prompt.toml",
             "name = \"prompt\"\nkind = \"code-completion\"\nmax_tokens = 2\nprompts = "
             "[\"ab\"]\n");
  const std::string bench_greedy_hot =
      "[bench]\ntasks = [\"" + f.dir +
      "/prompt.toml@0.7\"]\naudit_samples = 50\n"
      "[base.engine]\nbackend = \"cpu\"\nthreads = 1\n[base.target]\nmodel = \"" +
      f.model +
      "\"\n[[arm]]\nname = \"ngram+greedy\"\nstrategy = \"ngram\"\nrule = \"greedy\"\nk = 2\n";
  const std::string& good = f.good;
  // `specd run` on the good config with the prompt "x", each of `overrides` given by --set.
  const auto run_setting = [&](const std::vector<std::string>& overrides) {
    std::vector<std::string> args = {"run", "-c", good, "-p", "x"};
    for (const std::string& o : overrides) args.insert(args.end(), {"--set", o});
    return args;
  };
  const std::string draft = "[proposer]\nkind = \"draft-model\"\nk = 3\nmodel = \"";
  const std::string long_prompt(400, 'a');  // one token per byte; the context holds 256
  return {
      {"missing config file", {"run", "-c", f.dir + "/missing.toml", "-p", "x"}, 2, "missing.toml"},
      {"unreadable config file",
       {"run", "-c", f.unreadable, "-p", "x"},
       2,
       "unreadable.toml",
       "",
       true},
      {"config path is a folder", {"run", "-c", f.folder, "-p", "x"}, 2, "a-folder.toml"},
      {"TOML syntax error",
       {"run", "-c", f.config("syntax", "[engine]\nthreads = = 1\n"), "-p", "x"},
       2,
       "syntax.toml:2:"},
      {"unknown key with its location",
       {"run", "-c", f.config("unknown-key", test::cli_config(f.model, "threds = 1\n")), "-p", "x"},
       2,
       "unknown-key.toml:4:1"},
      {"model of the wrong architecture",
       {"run", "-c", f.config("gptneox", test::cli_config(f.gptneox)), "-p", "x"},
       1,
       "gptneox"},
      {"truncated model",
       {"run", "-c", f.config("truncated", test::cli_config(f.truncated)), "-p", "x"},
       1,
       "truncated.gguf"},
      {"a text file as model",
       {"run", "-c", f.config("text-model", test::cli_config(f.text_model)), "-p", "x"},
       1,
       "not-a-model.gguf"},
      {"missing model file",
       {"run", "-c", f.config("missing-model", test::cli_config(f.dir + "/nowhere.gguf")), "-p",
        "x"},
       1,
       "nowhere.gguf"},
      // Extra padding rows in the draft's embedding are common and allowed (same_vocabulary).
      {"draft vocabulary larger by padding only works",
       {"run", "-c",
        f.config("draft-bigger", test::cli_config(f.model, "", draft + f.draft_bigger + "\"\n")),
        "-p", "x"},
       0,
       "tokens"},
      {"draft vocabulary with a real token the target lacks",
       {"run", "-c",
        f.config("draft-extra", test::cli_config(f.model, "", draft + f.draft_extra + "\"\n")),
        "-p", "x"},
       2,
       "exists only in the larger vocabulary"},
      {"draft vocabulary with a different token",
       {"run", "-c",
        f.config("draft-renamed", test::cli_config(f.model, "", draft + f.draft_renamed + "\"\n")),
        "-p", "x"},
       2,
       "in one vocabulary and"},
      {"draft model of the same vocabulary works",
       {"run", "-c",
        f.config("draft-same", test::cli_config(f.model, "", draft + f.model + "\"\n")), "-p", "x"},
       0,
       "tokens"},
      {"empty prompt without BOS",
       {"run", "-c", f.config("no-bos", test::cli_config(f.no_bos)), "-p", ""},
       2,
       "the prompt is empty"},
      {"empty prompt with BOS works", {"run", "-c", good, "-p", ""}, 0, "tokens"},
      {"empty prompt from stdin with BOS works", {"run", "-c", good}, 0, "tokens"},
      {"prompt longer than the context",
       {"run", "-c", good, "-p", long_prompt},
       2,
       "the context holds 256"},
      {"-n 0", {"run", "-c", good, "-p", "x", "-n", "0"}, 2, "-n must be at least 1"},
      {"-n not a number", {"run", "-c", good, "-p", "x", "-n", "many"}, 2, "many"},
      {"invalid UTF-8 in the prompt works",
       {"run", "-c", good, "-p", "ab\xff\xfe\xc3("},
       0,
       "tokens"},
      {"invalid UTF-8 from a prompt file works",
       {"run", "-c", good, "-f", f.config("bad-utf8-prompt", "\x80\x80 \xed\xa0\x80 x")},
       0,
       "tokens"},
      {"missing prompt file",
       {"run", "-c", good, "-f", f.dir + "/no-prompt.txt"},
       2,
       "no-prompt.txt"},
      {"-p and -f together",
       {"run", "-c", good, "-p", "x", "-f", good},
       2,
       "give -p or -f, not both"},
      {"unknown option", {"run", "-c", good, "--frobnicate"}, 2, "--frobnicate"},
      {"option without its value", {"run", "-c", good, "-p"}, 2, "-p"},
      {"no config", {"run", "-p", "x"}, 2, "run needs -c FILE"},
      {"unknown command", {"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {"unknown proposer", run_setting({"proposer.kind=\"no-such-proposer\""}), 2,
       "no-such-proposer"},
      {"unknown rule", run_setting({"proposer.kind=ngram", "acceptance.rule=\"no-such-rule\""}), 2,
       "no-such-rule"},
      {"unknown backend", run_setting({"engine.backend=\"tpu\""}), 2, "tpu"},
      {"lossy rule without allow_lossy",
       run_setting({"proposer.kind=ngram", "acceptance.rule=typical"}), 2, "allow_lossy = true"},
      {"lossy rule with allow_lossy works",
       run_setting(
           {"proposer.kind=ngram", "acceptance.rule=typical", "acceptance.allow_lossy=true"}),
       0, "tokens"},
      {"rule needing q with a deterministic proposer",
       run_setting({"proposer.kind=ngram", "acceptance.rule=rejection"}), 2,
       "needs the draft distributions q"},
      {"unknown proposer parameter", run_setting({"proposer.kind=ngram", "proposer.frobnicate=1"}),
       2, "frobnicate"},
      {"k out of range", run_setting({"proposer.k=0"}), 2, "proposer.k"},
      {"greedy rule at temperature > 0, set on the command line",
       run_setting({"proposer.kind=ngram", "acceptance.rule=greedy", "sampling.temperature=0.7"}),
       2, "--set sampling.temperature: rule 'greedy' is greedy-exact"},
      {"greedy rule at temperature > 0, set in the file",
       {"run", "-c", f.config("greedy-hot", greedy_hot), "-p", "x", "--set",
        "sampling.max_tokens=2"},
       2,
       "greedy-hot.toml:12:15: rule 'greedy' is greedy-exact: it keeps the output distribution "
       "only at temperature 0, and at temperature 0.7 it is lossy"},
      {"greedy rule at the default temperature 1",
       {"run", "-c", f.config("greedy-default", greedy_default), "-p", "x"},
       2,
       "greedy-default.toml: [sampling] temperature is 1 when not set; rule 'greedy'"},
      {"greedy rule with a draft model at temperature > 0",
       run_setting({"proposer.kind=draft-model", "proposer.model=\"" + f.model + "\"",
                    "acceptance.rule=greedy", "sampling.temperature=0.5"}),
       2, "at temperature 0.5 it is lossy"},
      {"greedy rule at temperature > 0 with allow_lossy works",
       {"run", "-c", f.config("greedy-hot-lossy", greedy_hot + "allow_lossy = true\n"), "-p", "x"},
       0,
       "tokens"},
      {"greedy rule at temperature 0 works",
       run_setting({"proposer.kind=ngram", "acceptance.rule=greedy"}), 0, "tokens"},
      {"check-config: greedy rule at temperature > 0",
       {"check-config", f.config("greedy-hot-check", greedy_hot)},
       2,
       "greedy-hot-check.toml:12:15: rule 'greedy' is greedy-exact"},
      {"check-config: greedy rule at temperature > 0 with allow_lossy",
       {"check-config", f.config("greedy-hot-check-lossy", greedy_hot + "allow_lossy = true\n")},
       0,
       ": ok"},
      {"bench: a greedy arm in a sampled cell is refused before anything runs",
       {"bench", "-c", f.config("bench-greedy-hot", bench_greedy_hot), "--out",
        f.dir + "/bench-greedy-hot-out"},
       2,
       "bench-greedy-hot.toml: arm 'ngram+greedy', task prompt at temperature 0.7: rule "
       "'greedy' is greedy-exact"},
      {"bench: the same arm with allow_lossy runs",
       {"bench", "-c",
        f.config("bench-greedy-hot-lossy", bench_greedy_hot + "allow_lossy = true\n"), "--out",
        f.dir + "/bench-greedy-hot-lossy-out"},
       0,
       "reports in"},
      {"negative temperature", run_setting({"sampling.temperature=-1"}), 2, "temperature"},
  };
}

// Runs one bad-input case through the CLI and checks its status and message.
void check_case(const Case& c) {
  CAPTURE(c.name);
  std::vector<std::string> argv = {SPECD_CLI};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  test::CliResult r = test::run_program(argv, c.stdin_text);
  // SPECD_BAD_INPUT_PRINT=1 lists what the CLI says in every case, to review the messages.
  if (std::getenv("SPECD_BAD_INPUT_PRINT"))
    MESSAGE(c.name << " -> " << r.status << ": " << r.err.substr(0, r.err.find('\n')));
  // A failure: one clear line starting with "specd: error:", never a stack of internals.
  test::check_cli_result(c, r, {"specd: error: "});
}

}  // namespace

TEST_CASE("specd run: exit status and message for every kind of bad input") {
  for (const Case& c : cases())
    if (!c.needs_non_root) check_case(c);
}

TEST_CASE("specd run: files a user cannot read" * SPECD_MAY_SKIP) {
  if (geteuid() == 0) {
    ::specd::test::skip_here("root reads any file");
    return;
  }
  for (const Case& c : cases())
    if (c.needs_non_root) check_case(c);
}

TEST_CASE("backend = \"cuda\" without a GPU names cuda and the reason" * SPECD_MAY_SKIP) {
  if (access("/dev/nvidia0", F_OK) == 0) {
    ::specd::test::skip_here("this machine has an NVIDIA device");
    return;
  }
  const std::string cli = SPECD_CLI;
  const std::string plugin = cli.substr(0, cli.rfind('/')) + "/plugins/specd-backend-cuda.so";
  test::CliResult r = test::run_program(
      {cli, "run", "-c", files().good, "-p", "x", "--set", "engine.backend=cuda"});
  INFO("stderr: " << r.err);
  CHECK(r.err.rfind("specd: error: ", 0) == 0);
  if (access(plugin.c_str(), F_OK) == 0) {
    // Built with CUDA: the plugin loads and reports why it cannot run (a missing GPU is named,
    // never a silent fallback).
    CHECK(r.status == 1);
    CHECK(r.err.find("backend 'cuda' (org.specd.backend.cuda) cannot run here: ") !=
          std::string::npos);
  } else {
    // Built without CUDA: a configuration naming a backend this build lacks.
    CHECK(r.status == 2);
    CHECK(r.err.find("unknown backend plugin 'cuda'") != std::string::npos);
  }
}

// An unknown backend id is reported with the location of its key, as unknown proposer and
// rule ids are.
TEST_CASE("an unknown backend id names the key that set it") {
  test::CliResult r = test::run_program(
      {SPECD_CLI, "run", "-c", files().good, "-p", "x", "--set", "engine.backend=\"tpu\""});
  INFO("stderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find("--set engine.backend: unknown backend plugin 'tpu'") != std::string::npos);
  const std::string config =
      files().config("backend-tpu", "[engine]\nbackend = \"tpu\"\n\n[target]\nmodel = \"" +
                                        files().model + "\"\n");
  r = test::run_program({SPECD_CLI, "run", "-c", config, "-p", "x"});
  CHECK(r.status == 2);
  CHECK(r.err.find("backend-tpu.toml:2:11: unknown backend plugin 'tpu'") != std::string::npos);
}
