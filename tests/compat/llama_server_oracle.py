"""llama.cpp's llama-server as an oracle for speculative drafting (used by the scripts that make
the reference data of tests/compat/eagle3, tests/compat/dflash and tests/compat/qwen35), and
what those scripts share: their target, prompts and command line, and pieces of the files
they write.

The server runs on loopback with one slot, greedy, a fixed number of drafted tokens a round,
no confidence cut-off, f32 KV caches and no flash attention, and --verbose: its debug log names
the first candidate of each draft position ("draft candidate 0, pos P: ID") and each round's
verdict ("accepted X/Y draft tokens"), which rounds_of reads back.
"""
import argparse
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

TARGET = Path(__file__).resolve().parents[2] / ".." / "shared" / "compat" / "arch" / "llama.gguf"
PROMPTS = ["def parse(argv):", "The quick brown fox", "import os\nimport sys\n"]
N_PREDICT = 24

# The GGUFWriter method that writes each tokenizer key with its own type.
TOKENIZER_WRITERS = {
    "tokenizer.ggml.model": "add_tokenizer_model",
    "tokenizer.ggml.pre": "add_tokenizer_pre",
    "tokenizer.ggml.tokens": "add_token_list",
    "tokenizer.ggml.token_type": "add_token_types",
    "tokenizer.ggml.merges": "add_token_merges",
    "tokenizer.ggml.scores": "add_token_scores",
}


def parse_arguments(description, default_port):
    """The scripts' command line; puts llama.cpp's gguf-py first on the import path."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp source tree")
    ap.add_argument("--bin", required=True, type=Path, help="its build's bin folder")
    ap.add_argument("--port", type=int, default=default_port, help="loopback port for llama-server")
    ap.add_argument("--log-dir", type=Path, default=Path("/tmp"), help="where server logs go")
    args = ap.parse_args()
    sys.path.insert(0, str(args.llama_cpp / "gguf-py"))
    return args


def copy_tokenizer(w, target):
    """Copies the target's tokenizer.* keys into a draft file, as llama.cpp's converter does."""
    for name, field in target.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value = field.contents()
        if name in TOKENIZER_WRITERS:
            getattr(w, TOKENIZER_WRITERS[name])(value)
        elif isinstance(value, bool):
            w.add_bool(name, value)
        elif isinstance(value, int):
            w.add_uint32(name, value)


def new_writer(gguf, path, arch, d, n_layer, n_ff, n_head, n_head_kv):
    """A GGUFWriter for `path` holding the keys every written model starts with."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(path.stem)
    w.add_context_length(2048)
    w.add_embedding_length(d)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    return w


def add_swiglu_ffn(w, prefix, d, n_ff, normal, norm):
    """A layer's FFN norm and SwiGLU matrices, drawn in this order from `normal` and `norm`."""
    w.add_tensor(prefix + "ffn_norm.weight", norm(d))
    w.add_tensor(prefix + "ffn_gate.weight", normal((n_ff, d), d))
    w.add_tensor(prefix + "ffn_up.weight", normal((n_ff, d), d))
    w.add_tensor(prefix + "ffn_down.weight", normal((d, n_ff), n_ff))


def write_and_close(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def start_server(binary, target, draft, spec_type, n_draft, port, log):
    """llama-server on `target`; `draft` a draft file or None (MTP from the target's own
    layers), `spec_type` None for no speculation."""
    cmd = [str(binary), "-m", str(target)]
    if draft is not None:
        cmd += ["-md", str(draft)]
    if spec_type is not None:
        cmd += ["--spec-type", spec_type, "--spec-draft-n-max", str(n_draft),
                "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "-ctkd", "f32",
                "-ctvd", "f32"]
    cmd += ["-ctk", "f32", "-ctv", "f32", "-fa", "off", "-c", "512", "-np", "1", "-t", "2",
            "--verbose", "--no-warmup", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    sys.exit(f"{' '.join(cmd)} did not start")


def complete(port, prompt, n_predict, n_probs=0):
    """Greedy completion; with n_probs, each token's top n_probs log-probabilities too."""
    fields = {"prompt": prompt, "n_predict": n_predict, "temperature": 0, "top_k": 1, "seed": 1,
              "cache_prompt": False, "return_tokens": True, "ignore_eos": True}
    if n_probs:
        fields["n_probs"] = n_probs
    body = json.dumps(fields).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as r:
        return json.loads(r.read())


def rounds_of(log_text):
    """The drafted tokens and the accepted count of each round, from the server's log."""
    drafts, current, accepted = [], [], []
    for line in log_text.splitlines():
        m = re.search(r"draft candidate\s+0, pos\s+(\d+):\s+(-?\d+)", line)
        if m:
            if int(m.group(1)) == 0 and current:
                drafts.append(current)
                current = []
            current.append(int(m.group(2)))
            continue
        m = re.search(r"accepted\s+(\d+)/\s*(\d+) draft tokens", line)
        if m:
            if current:
                drafts.append(current)
                current = []
            accepted.append(int(m.group(1)))
    return drafts, accepted


def run_oracle(binary, target, draft, spec_type, n_draft, prompts, n_predict, port, log_path):
    """Each prompt's generated ids, drafts per round, accepted counts and timing totals."""
    results = []
    with open(log_path, "w") as log:
        server = start_server(binary, target, draft, spec_type, n_draft, port, log)
        try:
            for prompt in prompts:
                at = Path(log_path).stat().st_size
                out = complete(port, prompt, n_predict)
                time.sleep(0.2)  # the log lines of the request's end
                text = Path(log_path).read_text(errors="replace")[at:]
                drafts, accepted = rounds_of(text)
                if len(drafts) != len(accepted):
                    sys.exit(f"{Path(draft).name}: {len(drafts)} drafts but {len(accepted)} verdicts")
                t = out["timings"]
                results.append({"prompt": prompt, "prompt_n": t["prompt_n"],
                                "tokens": out["tokens"], "drafts": drafts,
                                "accepted": accepted, "draft_n": t.get("draft_n", 0),
                                "draft_n_accepted": t.get("draft_n_accepted", 0)})
        finally:
            server.terminate()
            server.wait()
    return results
