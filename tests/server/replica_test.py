#!/usr/bin/env python3
"""Two `specd serve` replicas behind HAProxy, with configs/haproxy.cfg (its ports replaced):

  1. requests sharing an X-Prefix-Key land on one replica, whose prefix cache then serves
     their shared system prompt (its /metrics counts hit rows; the other replica saw none);
  2. a replica whose queue is full answers 503 queue_full and the proxy retries the request
     on the other: every request of a burst that both together hold (ten) is answered 200;
  3. killing one replica (SIGKILL) under load loses no request that had not started: every
     request sent after the kill is answered 200 in full by the other replica, and a request
     in flight on the killed one either is retried there (a plain request: it had sent
     nothing) or ends with a clear error (a stream cut before [DONE], or a 5xx), never a hang.

Usage: replica_test.py SPECD  (exit 77 = skipped: no haproxy, or no shipped models)
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "serve"))
import specd_server as ss  # noqa: E402
from specd_server import FAILURES, check, verdict, free_port  # noqa: E402

CLIENT_TIMEOUT = 60  # a request not answered by then counts as a hang


def start_proxy(haproxy, work, frontend, ports):
    with open(os.path.join(ss.ROOT, "configs", "haproxy.cfg")) as f:
        text = f.read()
    text = text.replace("127.0.0.1:8080", "127.0.0.1:%d" % frontend)
    text = text.replace("127.0.0.1:8081", "127.0.0.1:%d" % ports[0])
    text = text.replace("127.0.0.1:8082", "127.0.0.1:%d" % ports[1])
    path = os.path.join(work, "haproxy.cfg")
    with open(path, "w") as f:
        f.write(text)
    log = open(os.path.join(work, "haproxy.log"), "w")
    proc = subprocess.Popen([haproxy, "-db", "-f", path], stdout=log, stderr=subprocess.STDOUT)
    return proc


def post(port, body, key, stream=False):
    """(status, served by, complete, text, error) for one completion through the proxy."""
    import http.client
    import json
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=stream)),
                     headers={"Content-Type": "application/json", "X-Prefix-Key": key})
        res = conn.getresponse()
        served = res.getheader("X-Served-By")
        if not stream or res.status != 200:
            data = res.read()
            if res.status != 200:
                return res.status, served, False, "", data[:200].decode("utf-8", "replace")
            return 200, served, True, json.loads(data)["choices"][0]["text"], ""
        text, done = "", False
        try:
            for line in res:
                line = line.strip()
                if line == b"data: [DONE]":
                    done = True
                    break
                if line.startswith(b"data: "):
                    event = json.loads(line[6:])
                    if "error" in event:
                        return 200, served, False, text, "error event: %s" % event["error"]
                    text += event["choices"][0]["text"]
        except (ConnectionError, http.client.IncompleteRead) as e:
            return 200, served, False, text, "stream cut: %s" % type(e).__name__
        return 200, served, done, text, "" if done else "stream ended before [DONE]"
    except socket.timeout:
        return None, None, False, "", "no answer in %d s (a hang)" % CLIENT_TIMEOUT
    except (ConnectionError, OSError) as e:
        return None, None, False, "", "connection: %s" % e
    finally:
        conn.close()


def metric(port, name):
    status, text = ss.request(port, "GET", "/metrics")
    return ss.metric(text, name) if status == 200 else None


def wait_healthy(port, deadline_s=30):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            status, _ = ss.request(port, "GET", "/health", timeout=2)
            if status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def key_for(port, replica, prompt):
    """An X-Prefix-Key that the proxy sends to `replica`."""
    for i in range(64):
        key = "system-%d" % i
        status, served, _, _, _ = post(port, {"prompt": prompt, "max_tokens": 1}, key)
        if status == 200 and served == replica:
            return key
    raise RuntimeError("no key of 64 went to " + replica)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    specd = sys.argv[1]
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists(
        "/usr/sbin/haproxy") else None)
    if not haproxy:
        print("skipped: haproxy is not installed (Debian package haproxy; make deps installs it)")
        return 77
    if not os.path.exists(os.path.join(ss.ROOT, "models", "target.gguf")):
        print("skipped: the shipped models are missing")
        return 77
    system = "You are a careful assistant who answers in one line and names a source"
    while len(system) < 400:
        system += ", checking each figure twice"
    with tempfile.TemporaryDirectory() as work:
        # Two running sequences and four waiting per replica: a burst of ten overflows one,
        # and one replica alone holds the four clients of the kill (with room for a finished
        # request that its scheduler has not let go of yet).
        config = ss.write_config(os.path.join(work, "replica.toml"),
                                 "max_sequences = 2\nqueue_limit = 4\n", max_tokens=48)
        replicas = [ss.Server(specd, config), ss.Server(specd, config)]
        front = free_port()
        proxy = start_proxy(haproxy, work, front, [r.port for r in replicas])
        try:
            check(wait_healthy(front), "the proxy never answered /health")
            time.sleep(1.2)  # both replicas' checks up
            names = ["replica1", "replica2"]

            # 1. Prefix routing.
            key = key_for(front, "replica1", "warm-up")
            before = [metric(r.port, "specd_prefix_hit_rows_total") for r in replicas]
            served = set()
            for q in ("Q: a river?", "Q: a mountain?", "Q: a city?", "Q: a poet?"):
                status, by, done, _, err = post(front, {"prompt": system + " " + q,
                                                        "max_tokens": 8}, key)
                check(status == 200 and done, "routed request: %s %s" % (status, err))
                served.add(by)
            check(served == {"replica1"}, "one prefix key went to %s" % sorted(served))
            hits = [metric(r.port, "specd_prefix_hit_rows_total") - b
                    for r, b in zip(replicas, before)]
            print("prefix hit rows by replica:", hits, flush=True)
            check(hits[0] >= 3 * 16 * 5, "the routed replica's prefix cache hit %d rows" % hits[0])
            check(hits[1] == 0, "the other replica saw the prompt (%d hit rows)" % hits[1])

            # 2. A full queue's 503 is retried on the other replica.
            results = []

            def burst(i):
                results.append(post(front, {"prompt": "Once upon a time %d" % i,
                                            "max_tokens": 48}, key))

            threads = [threading.Thread(target=burst, args=(i,)) for i in range(10)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            check(all(r[0] == 200 and r[2] for r in results),
                  "a burst both replicas hold: %s" % [(r[0], r[4]) for r in results])
            by = sorted(r[1] or "-" for r in results)
            print("burst of 10 served by:", by, flush=True)
            check("replica2" in by, "no request of the burst was retried on replica2: %s" % by)

            # 3. Kill replica1 under load.
            log = []
            lock = threading.Lock()
            keys = [key_for(front, names[i % 2], "warm-up %d" % i) for i in range(4)]
            killed_at = [None]
            wanted_after = 8

            def keep_going():
                # Until the kill, and after it for at least 4 s and until `wanted_after`
                # requests sent after it have been answered (a slow build answers fewer a
                # second), at most 60 s.
                k = killed_at[0]
                if k is None:
                    return True
                now = time.monotonic()
                if now < k + 4.0:
                    return True
                if now > k + 60.0:
                    return False
                with lock:
                    return sum(1 for t0, _, _ in log if t0 > k) < wanted_after

            def client(i):
                n = 0
                while keep_going():
                    t0 = time.monotonic()
                    r = post(front, {"prompt": system + " Q%d.%d" % (i, n), "max_tokens": 48},
                             keys[i], stream=(n % 2 == 0))
                    with lock:
                        log.append((t0, time.monotonic(), r))
                    n += 1

            threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            # Kill once both replicas have answered (a slow build needs longer than a fixed
            # wait), at most 30 s on.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with lock:
                    served = {r[1] for _, _, r in log}
                if served >= {"replica1", "replica2"}:
                    break
                time.sleep(0.1)
            replicas[0].proc.send_signal(signal.SIGKILL)
            killed_at[0] = time.monotonic()
            for t in threads:
                t.join(CLIENT_TIMEOUT + 70)
            check(not any(t.is_alive() for t in threads), "a client never got an answer")
            k = killed_at[0]
            after = [r for t0, _, r in log if t0 > k]
            inflight = [(t1 - t0, r) for t0, t1, r in log if t0 <= k < t1]
            before_kill = [r for t0, t1, r in log if t1 <= k]
            print("requests: %d done before the kill, %d in flight, %d sent after" %
                  (len(before_kill), len(inflight), len(after)), flush=True)
            check(len(after) >= wanted_after, "too few requests after the kill: %d" % len(after))
            check({r[1] for r in before_kill} >= {"replica1", "replica2"},
                  "load did not reach both replicas before the kill")
            lost = [r for r in after if not (r[0] == 200 and r[2])]
            check(not lost, "requests sent after the kill failed: %s" %
                  [(r[0], r[4]) for r in lost][:5])
            check(all(r[1] == "replica2" for r in after if r[0] == 200),
                  "a request after the kill was served by the killed replica")
            for seconds, r in inflight:
                if r[0] == 200 and r[2]:
                    continue  # finished, or retried on replica2 before sending anything
                # A 5xx, a stream cut before [DONE], or a reset connection: an error the
                # client sees at once.
                check(r[4] != "" and "hang" not in r[4],
                      "an in-flight request ended unclearly: %s" % (r,))
            print("in flight at the kill:", [(round(s, 2), r[0], r[1], r[2], r[4][:40])
                                             for s, r in inflight], flush=True)
            if FAILURES:
                with open(os.path.join(work, "haproxy.log")) as f:
                    print("haproxy's log:\n" + f.read()[-3000:])
        finally:
            proxy.terminate()
            try:
                proxy.wait(10)
            except subprocess.TimeoutExpired:
                proxy.kill()
            for r in replicas:
                r.kill()
    return verdict("replica_test")


if __name__ == "__main__":
    sys.exit(main())
