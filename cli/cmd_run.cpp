// specd run -c FILE [-p PROMPT] [-n N] [--set section.key=value]... [--json]
#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>

#include "args.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/json_writer.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"

namespace specd::cli {
namespace {

const char* kRunHelp =
    "usage: specd run -c FILE [-p PROMPT | -f PROMPT_FILE] [-n N] [--set section.key=value]...\n"
    "                 [--json] [--seed S]\n"
    "  -c, --config FILE   the run configuration (TOML)\n"
    "  -p, --prompt TEXT   the prompt (default: read standard input)\n"
    "  -f, --file FILE     read the prompt from a file\n"
    "  -n, --max-tokens N  tokens to generate (overrides [sampling] max_tokens)\n"
    "  --set s.k=v         override any configuration key (checked like the file)\n"
    "  --json              print {\"text\", \"tokens\", \"stats\"} instead of streaming text\n"
    "Stop reasons: eos, stop, length, context, interrupted (SIGINT or SIGTERM: what was\n"
    "generated is printed, then exit status 130 or 143; a second Ctrl-C ends at once).\n";

// The signal (SIGINT or SIGTERM) that asked the run to stop; 0 while none has. The handler
// only sets it (async-signal-safe); the engine checks it between rounds and the run then
// prints what was generated, as it would at any other stop, and exits 128 + the signal.
volatile std::sig_atomic_t g_interrupt = 0;

extern "C" void on_interrupt(int signal) {
  g_interrupt = signal;
}

// SA_RESETHAND: a second Ctrl-C kills the process at once, as users expect. A SIGINT the
// shell set to be ignored (a background job) stays ignored. Both signals are unblocked
// once the handler is in place, so one sent earlier (while blocked) is handled now.
void catch_interrupts() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigset_t unblock;
  sigemptyset(&unblock);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction previous {};
    sigaction(signal, nullptr, &previous);
    if (signal == SIGINT && previous.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
    sigaddset(&unblock, signal);
  }
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
}

void write_stats(JsonWriter& w, const GenerationStats& s) {
  w.begin_object();
  w.key("prompt_tokens").value(s.prompt_tokens);
  w.key("generated_tokens").value(s.generated_tokens);
  w.key("rounds").value(s.rounds);
  w.key("drafted").value(s.drafted);
  w.key("accepted").value(s.accepted);
  w.key("tau").value(s.tau());
  w.key("acceptance_rate").value(s.acceptance_rate());
  w.key("per_position").begin_array();
  for (double r : s.per_position()) w.value(r);
  w.end_array();
  w.key("tokens_per_s").value(s.tokens_per_s());
  w.key("prefill_tokens_per_s").value(s.prefill_tokens_per_s());
  w.key("prefill_s").value(s.prefill_s);
  w.key("first_token_s").value(s.first_token_s);
  w.key("generate_s").value(s.generate_s);
  w.key("draft_s").value(s.draft_s);
  w.key("verify_s").value(s.verify_s);
  w.key("accept_s").value(s.accept_s);
  w.key("commit_s").value(s.commit_s);
  w.end_object();
}

void print_stats(const Engine& engine, const GenerationResult& r) {
  const GenerationStats& s = r.stats;
  double total = s.draft_s + s.verify_s + s.accept_s + s.commit_s;
  auto share = [&](double x) { return total > 0 ? 100.0 * x / total : 0.0; };
  std::fprintf(stderr, "\n--- specd: %s on %s", engine.proposer_name().c_str(),
               engine.backend_name().c_str());
  if (!engine.rule_name().empty()) std::fprintf(stderr, ", rule %s", engine.rule_name().c_str());
  std::fprintf(stderr, " (stop: %s)\n", r.stop_reason.c_str());
  std::fprintf(stderr, "prompt %llu tokens at %.1f tok/s; generated %llu tokens at %.1f tok/s\n",
               (unsigned long long)s.prompt_tokens, s.prefill_tokens_per_s(),
               (unsigned long long)s.generated_tokens, s.tokens_per_s());
  std::fprintf(stderr, "rounds %llu, drafted %llu, accepted %llu, tau %.3f, alpha %.3f\n",
               (unsigned long long)s.rounds, (unsigned long long)s.drafted,
               (unsigned long long)s.accepted, s.tau(), s.acceptance_rate());
  if (!s.drafted_at.empty()) {
    std::fprintf(stderr, "per-position acceptance:");
    for (double a : s.per_position()) std::fprintf(stderr, " %.3f", a);
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr,
               "time: draft %.3fs (%.0f%%), verify %.3fs (%.0f%%), accept %.3fs (%.0f%%), "
               "commit %.3fs (%.0f%%)\n",
               s.draft_s, share(s.draft_s), s.verify_s, share(s.verify_s), s.accept_s,
               share(s.accept_s), s.commit_s, share(s.commit_s));
}

}  // namespace

int run_command(int argc, char** argv) {
  Args args(argc, argv);
  std::string config_path, prompt, prompt_file;
  bool have_prompt = false, json = false;
  std::optional<int> max_tokens;
  std::vector<std::string> overrides;
  while (!args.done()) {
    if (args.match("--config", "-c")) {
      config_path = args.value();
    } else if (args.match("--prompt", "-p")) {
      prompt = args.value();
      have_prompt = true;
    } else if (args.match("--file", "-f")) {
      prompt_file = args.value();
    } else if (args.match("--max-tokens", "-n")) {
      max_tokens = args.int_value();
      if (*max_tokens < 1) throw UsageError("-n must be at least 1");
    } else if (args.match("--set")) {
      overrides.push_back(args.value());
    } else if (args.match("--seed")) {
      overrides.push_back("engine.seed=" + args.value());
    } else if (args.match("--json")) {
      json = true;
    } else if (args.match("--help", "-h")) {
      std::fputs(kRunHelp, stdout);
      return 0;
    } else {
      args.unknown();
    }
  }
  if (config_path.empty()) throw UsageError("run needs -c FILE (see specd run --help)");
  if (have_prompt && !prompt_file.empty()) throw UsageError("give -p or -f, not both");
  Config config = load_config(config_path, overrides);
  check_required_for_run(config);
  if (!prompt_file.empty()) {
    prompt = read_text_file(prompt_file, "prompt file");
  } else if (!have_prompt) {
    prompt = read_text_fd(0, "standard input", "prompt");
  }

  PluginRegistry registry(config.plugins.paths);
  for (const std::string& w : registry.warnings())
    std::fprintf(stderr, "specd run: warning: %s\n", w.c_str());
  Engine engine(config, registry);
  GenerateOptions options;
  options.max_tokens = max_tokens;
  options.interrupt = &g_interrupt;
  if (!json) {
    options.on_text = [](const std::string& piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      flush_stdout();  // a failed write ends the run (exit 1) instead of going unnoticed
    };
  }
  // Until here SIGINT/SIGTERM end the process at once (130/143), whatever it waits for (a
  // prompt on a pipe that never ends, a plugin that loops while loading); from here they end
  // generation between rounds with what was generated.
  catch_interrupts();
  GenerationResult result = engine.generate(prompt, options);
  if (json) {
    JsonWriter w;
    w.begin_object();
    w.key("text").value(result.text);
    w.key("tokens").begin_array();
    for (int32_t t : result.tokens) w.value(static_cast<int64_t>(t));
    w.end_array();
    w.key("stop_reason").value(result.stop_reason);
    w.key("proposer").value(engine.proposer_name());
    w.key("rule").value(engine.rule_name());
    w.key("backend").value(engine.backend_name());
    w.key("stats");
    write_stats(w, result.stats);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("\n");
    print_stats(engine, result);
  }
  flush_stdout();  // before the registry unloads plugins: see flush_stdout
  return g_interrupt ? 128 + g_interrupt : 0;
}

}  // namespace specd::cli
