"""Start `specd serve` on a loopback port and talk to it (python3 standard library only).

Used by the serving benchmarks in bench/serve/ and the Python tests of tests/server/ and
tests/deploy/ (with their check(), free_port() and the KV events' chain_hashes()).
"""

import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# A test's failures: check() records and prints each and the test goes on; the test's exit
# status is 1 when any was recorded.
FAILURES = []


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)


def verdict(name):
    """A test's exit status from check()'s failures, said on the last line."""
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("%s: ok" % name)
    return 0


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_loop(worker, clients):
    """Runs worker(i) on `clients` threads (i = 0 .. clients - 1) until each returns; the
    seconds that took."""
    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - start


def chain_hashes(tokens, partition=0, block=16):
    """The KV-cache events' hash of each full block of `tokens` (docs/SCALING.md, "KV-cache
    events"): SHA-256 over the parent's hash (8 bytes big-endian) and the block's tokens (4
    bytes each, little-endian), its first 8 bytes as a big-endian integer."""
    out, parent = [], partition
    for start in range(0, len(tokens) - len(tokens) % block, block):
        data = parent.to_bytes(8, "big") + b"".join(
            t.to_bytes(4, "little", signed=True) for t in tokens[start:start + block])
        parent = int.from_bytes(hashlib.sha256(data).digest()[:8], "big")
        out.append(parent)
    return out


def write_config(path, server_keys="", max_tokens=64):
    """A configuration like configs/default.toml (cpu, draft model + rejection, greedy)
    with absolute model paths and a [server] section on an ephemeral port."""
    models = os.path.join(ROOT, "models")
    with open(path, "w") as f:
        f.write(
            '[engine]\nbackend = "cpu"\nthreads = 1\nseed = 1\n'
            f'[target]\nmodel = "{models}/target.gguf"\n'
            f'[proposer]\nkind = "draft-model"\nmodel = "{models}/draft.gguf"\nk = 3\n'
            '[acceptance]\nrule = "rejection"\n'
            f"[sampling]\ntemperature = 0.0\nmax_tokens = {max_tokens}\n"
            "[server]\nport = 0\n" + server_keys
        )
    return path


class Server:
    """`specd serve -c CONFIG` as a child process; stop() sends SIGTERM and returns the
    exit status, kill() ends it hard. Use as a context manager."""

    def __init__(self, specd, config, timeout=120):
        self.log = tempfile.NamedTemporaryFile(prefix="specd-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [specd, "serve", "-c", config], stdout=subprocess.DEVNULL, stderr=self.log
        )
        self.port = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.port == 0:
            # The port opens before the model loads: wait for the line that says it is ready.
            m = re.search(
                r"listening on http://127\.0\.0\.1:(\d+)\n(?:.*\n)*specd serve: ready", self.log_text()
            )
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.port == 0:
            self.kill()
            raise RuntimeError("specd serve did not start:\n" + self.log_text())

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def rss_kib(self):
        """The server's resident memory (VmRSS from /proc), in KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS for pid %d" % self.proc.pid)

    def stop(self, timeout=60):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        os.unlink(self.log.name)


def request(port, method, path, body=None, raw=None, timeout=120, headers=None):
    """One request on a fresh connection: (status, parsed JSON or text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        res = conn.getresponse()
        text = res.read().decode("utf-8", "replace")
        try:
            return res.status, json.loads(text)
        except ValueError:
            return res.status, text
    finally:
        conn.close()


def stream(port, path, body, timeout=120, on_event=None):
    """A streaming request. Returns (status, events) where events are (t, data) pairs: the
    monotonic time each `data:` event arrived and its parsed JSON ("[DONE]" as is).
    on_event(i, data) may return False to hang up after the i-th event."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    events = []
    try:
        conn.request("POST", path, body=json.dumps(dict(body, stream=True)),
                     headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        if res.status != 200:
            return res.status, [(time.monotonic(), json.loads(res.read() or b"null"))]
        for line in res:
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            payload = line[6:].decode()
            data = payload if payload == "[DONE]" else json.loads(payload)
            events.append((time.monotonic(), data))
            if on_event is not None and on_event(len(events) - 1, data) is False:
                break
            if data == "[DONE]":
                break
        return res.status, events
    finally:
        conn.close()


def metric(text, name):
    """The value of an unlabelled Prometheus sample `name` in /metrics text."""
    m = re.search(r"^" + re.escape(name) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else None
