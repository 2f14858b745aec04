#!/usr/bin/env python3
"""Resident memory of `specd serve` once its model is loaded, and after a few completions.

    python3 bench/serve/serve_rss.py build/bin/specd [-c configs/serve.toml] [--set k=v]...

Starts the server on an ephemeral loopback port (engine.backend = cpu unless --set says
otherwise), waits until GET /health answers 200, prints VmRSS and VmHWM from
/proc/PID/status (KiB), runs --requests greedy completions one after another, prints them
again, and stops the server with SIGTERM. Every wait is bounded.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def get(url, timeout=10):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specd")
    ap.add_argument("-c", "--config", default=os.path.join(ROOT, "configs", "serve.toml"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    cmd = [a.specd, "serve", "-c", a.config, "--port", "0", "--set", 'engine.backend="cpu"']
    for s in a.set:
        cmd += ["--set", s]
    log = tempfile.NamedTemporaryFile(prefix="specd-rss-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + a.timeout
        port = None
        while time.monotonic() < deadline and proc.poll() is None:
            with open(log.name, errors="replace") as f:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)\n", f.read())
            if m:
                port = int(m.group(1))
                status, _ = get(f"http://127.0.0.1:{port}/health")
                if status == 200:
                    break
            time.sleep(0.05)
        else:
            with open(log.name, errors="replace") as f:
                sys.exit("specd serve did not become ready:\n" + f.read())
        base = f"http://127.0.0.1:{port}"
        loaded = status_kib(proc.pid, "VmRSS")
        print(f"loaded: VmRSS {loaded} KiB, VmHWM {status_kib(proc.pid, 'VmHWM')} KiB")
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 32}).encode()
        for _ in range(a.requests):
            req = urllib.request.Request(
                base + "/v1/completions", body, {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=a.timeout) as r:
                r.read()
        print(
            f"after {a.requests} completions: VmRSS {status_kib(proc.pid, 'VmRSS')} KiB, "
            f"VmHWM {status_kib(proc.pid, 'VmHWM')} KiB"
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        os.unlink(log.name)


if __name__ == "__main__":
    main()
