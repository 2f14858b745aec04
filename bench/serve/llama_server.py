"""Start llama.cpp's `llama-server` on a loopback port (python3 standard library only), as the
peer in serve_bench.py's side-by-side mode (--peer DIR, DIR a llama.cpp build folder).

llama.cpp is never a dependency of specd: the benchmark runs it only when given a build.
"""

import os
import re
import subprocess
import tempfile
import time

import specd_server as ss


def find_binary(build_dir, name="llama-server"):
    """The binary `name` in a llama.cpp build folder (DIR/bin/NAME or DIR/NAME)."""
    for path in (os.path.join(build_dir, "bin", name), os.path.join(build_dir, name)):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("%s: no %s in it (nor in its bin/): give --peer the folder "
                            "llama.cpp was built into" % (build_dir, name))


class LlamaServer:
    """llama-server serving `target` with `slots` parallel sequences of `context` tokens
    each, `threads` threads, KV caches of `kv_type` (-ctk/-ctv); with `draft`, speculative
    decoding with that draft model (--spec-type draft-simple), or with `draft` "mtp" with the
    target's own MTP layers (--spec-type draft-mtp), drafting up to `draft_max` tokens.
    stop() ends it."""

    def __init__(self, binary, target, threads, slots, context, kv_type="f16", draft=None,
                 draft_max=4, timeout=300):
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log",
                                               delete=False)
        # The context is shared by the slots: each gets `context` tokens.
        cmd = [binary, "-m", target, "-t", str(threads), "-tb", str(threads),
               "-c", str(context * slots), "-np", str(slots), "--host", "127.0.0.1",
               "--port", "0", "--no-webui", "-ctk", kv_type, "-ctv", kv_type]
        if draft == "mtp":
            cmd += ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(draft_max),
                    "-ctkd", kv_type, "-ctvd", kv_type]
        elif draft:
            cmd += ["-md", draft, "--spec-type", "draft-simple", "--spec-draft-n-max",
                    str(draft_max), "-td", str(threads), "-tbd", str(threads),
                    "-ctkd", kv_type, "-ctvd", kv_type]
        self.command = cmd
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.port == 0:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log_text())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if self.port == 0:
            self.stop()
            raise RuntimeError("llama-server did not start:\n" + self.log_text()[-4000:])
        # Listening comes before the model is loaded: wait until /health says ok.
        while time.monotonic() < deadline:
            try:
                status, _ = ss.request(self.port, "GET", "/health", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama-server did not become ready:\n" + self.log_text()[-4000:])

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass
