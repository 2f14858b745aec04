#!/usr/bin/env python3
"""specd serve under load and abuse (issue 16, item 8), on an ephemeral loopback port:

  1. 64 concurrent streaming clients, about half hanging up at a random point;
  2. malformed JSON, an oversized body, unknown fields, wrong types and out-of-range values:
     each a 400 (413 for the size) whose error names the field;
  3. 1,000 small requests (completion, chat, stream, bad) while resident memory (VmRSS) is
     sampled: after warm-up it must not grow with the requests (median growth per 100
     requests under 200 KiB, total under 16 MiB);
  4. the server still answers as before, counted the hang-ups, and exits 0 on SIGTERM;
  5. its listen queue holds such a burst (the kernel resets what overflows it), and a second
     server on the same port is refused rather than sharing it.

usage: load_test.py SPECD_CLI [--sanitized]   (python3 standard library only; exit 0 = pass;
       --sanitized: a sanitizer build, whose quarantine grows VmRSS: report it, do not assert)
"""

import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench", "serve"))
import specd_server as ss  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def streaming_clients(port, n, rng):
    """n concurrent streams; a client hangs up after a random event or reads to the end."""
    results = [None] * n
    plans = [(rng.random() < 0.5, rng.randrange(0, 6), rng.randrange(8, 48)) for _ in range(n)]

    def client(i):
        hang_up, after, max_tokens = plans[i]
        body = {"prompt": "Once upon a time %d" % i, "max_tokens": max_tokens}
        stop = (lambda k, _: k < after) if hang_up else None
        try:
            results[i] = ss.stream(port, "/v1/completions", body, on_event=stop)
        except Exception as e:  # noqa: BLE001 - reported as a failure below
            results[i] = ("error", repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for i, (r, plan) in enumerate(zip(results, plans)):
        check(r is not None and r[0] == 200,
              "stream %d: %r" % (i, r if r and r[0] == "error" else r and r[0]))
        if r is None or r[0] != 200 or plan[0]:
            continue
        events = r[1]
        check(events and events[-1][1] == "[DONE]", "stream %d did not end with [DONE]" % i)
        finishes = [d["choices"][0]["finish_reason"] for _, d in events
                    if d != "[DONE]" and d["choices"]]
        check(finishes and finishes[-1] in ("length", "stop"),
              "stream %d: finish_reason %r" % (i, finishes[-1:]))
    return sum(1 for p in plans if p[0])


def listen_backlog(port):
    """The accept-queue limit of the TCP socket listening on loopback `port`, from the
    kernel's socket diagnostics (what `ss -lt` shows as Send-Q); None if none is found."""
    sock_diag, by_family, listen_state, done = 4, 20, 10, 3
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0,
                          1 << listen_state) + bytes(48)
    header = struct.pack("=IHHII", 16 + len(request), by_family, 0x1 | 0x300, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, sock_diag) as nl:
        nl.sendto(header + request, (0, 0))
        while True:
            data = nl.recv(65536)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, offset)
                if kind == done or length < 16:
                    return None
                # inet_diag_msg: 4 bytes, the socket id (source port first, big-endian),
                # then expires, rqueue and wqueue; a listener's wqueue is its backlog.
                sport = struct.unpack_from("!H", data, offset + 20)[0]
                if sport == port:
                    return struct.unpack_from("=I", data, offset + 16 + 60)[0]
                offset += (length + 3) & ~3


def second_server_refused(specd, work, port):
    """A second `specd serve` on the port in use must fail to bind, not share the port."""
    config = ss.write_config(os.path.join(work, "second.toml"))
    with open(config) as f:
        text = f.read().replace("port = 0", "port = %d" % port)
    with open(config, "w") as f:
        f.write(text)
    try:
        r = subprocess.run([specd, "serve", "-c", config], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=60, text=True)
    except subprocess.TimeoutExpired:
        check(False, "a second server on port %d kept running" % port)
        return
    check(r.returncode != 0 and "cannot listen" in r.stderr and "address in use" in r.stderr,
          "second server on port %d: exit %d, %r" % (port, r.returncode, r.stderr[-300:]))


BAD = [
    # (path, raw body, expected status, the field the error must name or "")
    ("/v1/completions", '{"prompt": ', 400, ""),
    ("/v1/completions", "[1, 2]", 400, ""),
    ("/v1/completions", "", 400, ""),
    ("/v1/completions", b'{"prompt": "\xff\xfe"}', 400, ""),
    ("/v1/completions", '{"prompt": "x", "surprise": 1}', 400, "surprise"),
    ("/v1/completions", '{"prompt": "x", "speculative": {"kind": "ngram"}}', 400,
     "speculative.kind"),
    ("/v1/completions", '{"prompt": "x", "stream_options": {"x": 1}}', 400, "stream_options.x"),
    ("/v1/completions", '{"prompt": 5}', 400, "prompt"),
    ("/v1/completions", '{"prompt": "x", "max_tokens": "many"}', 400, "max_tokens"),
    ("/v1/completions", '{"prompt": "x", "temperature": "hot"}', 400, "temperature"),
    ("/v1/completions", '{"prompt": "x", "stream": "yes"}', 400, "stream"),
    ("/v1/completions", '{"prompt": "x", "stop": 5}', 400, "stop"),
    ("/v1/completions", '{"prompt": "x", "stop": ["a", 3]}', 400, "stop[1]"),
    ("/v1/completions", '{"prompt": "x", "seed": "s"}', 400, "seed"),
    ("/v1/completions", '{"prompt": "x", "temperature": 3}', 400, "temperature"),
    ("/v1/completions", '{"prompt": "x", "top_p": 0}', 400, "top_p"),
    ("/v1/completions", '{"prompt": "x", "top_k": -2}', 400, "top_k"),
    ("/v1/completions", '{"prompt": "x", "min_p": 1}', 400, "min_p"),
    ("/v1/completions", '{"prompt": "x", "max_tokens": 0}', 400, "max_tokens"),
    ("/v1/completions", '{"prompt": "x", "max_tokens": 1e30}', 400, "max_tokens"),
    ("/v1/completions", '{"prompt": "x", "n": 200}', 400, "n"),
    ("/v1/completions", '{"prompt": "x", "seed": -1}', 400, "seed"),
    ("/v1/completions", '{"prompt": "x", "speculative": {"k": 65}}', 400, "speculative.k"),
    ("/v1/completions", '{"prompt": "x", "speculative": {"proposer": "nope"}}', 400,
     "speculative.proposer"),
    ("/v1/chat/completions", '{"messages": []}', 400, "messages"),
    ("/v1/chat/completions", '{"messages": [{"role": 5, "content": "x"}]}', 400,
     "messages[0].role"),
    ("/v1/chat/completions", '{"messages": [{"role": "wizard", "content": "x"}]}', 400,
     "messages[0].role"),
    ("/v1/chat/completions", '{"messages": [{"role": "user", "content": [{"type": "image"}]}]}',
     400, "messages[0].content[0].type"),
    ("/v1/completions", '{"prompt": "%s"}' % ("a" * 70000), 413, ""),
]


def bad_requests(port):
    for path, raw, status, param in BAD:
        got, body = ss.request(port, "POST", path, raw=raw)
        what = "%s %.60r" % (path, raw)
        check(got == status, "%s: status %d, expected %d" % (what, got, status))
        err = body.get("error") if isinstance(body, dict) else None
        check(isinstance(err, dict) and err.get("message"), "%s: no OpenAI error body" % what)
        if param and isinstance(err, dict):
            check(err.get("param") == param, "%s: param %r, expected %r" % (what, err.get("param"),
                                                                           param))
            check(param in err.get("message", ""), "%s: message %r does not name %r" %
                  (what, err.get("message"), param))


def one_small_request(port, i, rng):
    kind = i % 4
    if kind == 0:
        s, _ = ss.request(port, "POST", "/v1/completions",
                          {"prompt": "Request %d" % i, "max_tokens": 2})
        return s == 200
    if kind == 1:
        s, _ = ss.request(port, "POST", "/v1/chat/completions",
                          {"messages": [{"role": "user", "content": "hi %d" % i}],
                           "max_tokens": 2})
        return s == 200
    if kind == 2:
        hang_up = rng.random() < 0.5
        s, _ = ss.stream(port, "/v1/completions", {"prompt": "Stream %d" % i, "max_tokens": 3},
                         on_event=(lambda k, _: False) if hang_up else None)
        return s == 200
    path, raw, status, _ = BAD[i % len(BAD)]
    s, _ = ss.request(port, "POST", path, raw=raw)
    return s == status


def many_requests(server, total, workers, rng):
    """`total` small requests on `workers` threads; VmRSS sampled every 100 requests."""
    lock = threading.Lock()
    counter = {"next": 0, "bad": 0}
    samples = []

    def worker(seed):
        local = random.Random(seed)
        while True:
            with lock:
                i = counter["next"]
                counter["next"] += 1
            if i >= total:
                return
            if not one_small_request(server.port, i, local):
                with lock:
                    counter["bad"] += 1
            if (i + 1) % 100 == 0:
                with lock:
                    samples.append((i + 1, server.rss_kib()))

    threads = [threading.Thread(target=worker, args=(rng.random(),)) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    check(counter["bad"] == 0, "%d of %d small requests got an unexpected answer" %
          (counter["bad"], total))
    return sorted(samples)


def main():
    args = [a for a in sys.argv[1:] if a != "--sanitized"]
    sanitized = len(args) != len(sys.argv) - 1
    if len(args) != 1:
        print(__doc__)
        return 2
    specd = args[0]
    models = os.path.join(ss.ROOT, "models")
    if not os.path.exists(os.path.join(models, "target.gguf")):
        print("skipped: the shipped models are missing from", models)
        return 77
    rng = random.Random(20261130)
    with tempfile.TemporaryDirectory() as work:
        # The prefix cache off: cached blocks keep their pages (up to the KV budget, a fixed
        # pool: scheduler_test checks that eviction keeps it at its size), which would hide
        # what the requests themselves leak.
        config = ss.write_config(os.path.join(work, "load.toml"),
                                 'queue_limit = 96\nmax_body_bytes = 65536\n'
                                 'chat_template = "chatml"\nprefix_cache = false\n')
        with ss.Server(specd, config) as server:
            port = server.port
            before, first = ss.request(port, "POST", "/v1/completions",
                                       {"prompt": "Once upon a time", "max_tokens": 16})
            check(before == 200, "first request: %d" % before)
            try:
                backlog = listen_backlog(port)
            except OSError as e:  # a sandbox without netlink: say so, check the rest
                print("listen backlog not checked: no socket diagnostics here (%s)" % e)
            else:
                check(backlog is not None and backlog >= 64,
                      "listen backlog %r: a burst of 64 clients would be reset" % backlog)
            second_server_refused(specd, work, port)

            hung_up = streaming_clients(port, 64, rng)
            print("64 streaming clients done, %d hung up" % hung_up, flush=True)
            bad_requests(port)
            print("%d malformed or out-of-range requests refused" % len(BAD), flush=True)

            samples = many_requests(server, 1000, 4, rng)
            print("VmRSS (KiB) by requests served:", samples, flush=True)
            # After warm-up (the first 300 requests) memory must not grow with the requests.
            warm = [kib for n, kib in samples if n >= 300]
            check(len(warm) >= 5, "too few memory samples: %r" % samples)
            if warm and sanitized:
                print("VmRSS flatness not asserted: a sanitizer build keeps freed memory in "
                      "its quarantine (grew %d KiB)" % (max(warm) - warm[0]), flush=True)
            elif warm:
                # A leak grows every interval; the allocator grows in steps now and then (a
                # new arena or a heap extension, about 2 MiB at once), so the median step
                # per 100 requests is what is asserted, with a cap on the total.
                steps = sorted(b - a for a, b in zip(warm, warm[1:]))
                per_100 = steps[len(steps) // 2]
                check(per_100 < 200, "VmRSS grows %d KiB per 100 requests after warm-up "
                      "(median of the steps)" % per_100)
                growth = max(warm) - warm[0]
                check(growth < 16384, "VmRSS grew %d KiB from 300 to 1,000 requests" % growth)

            status, health = ss.request(port, "GET", "/health")
            check(status == 200 and health == {"status": "ok"}, "health: %d %r" % (status, health))
            after, again = ss.request(port, "POST", "/v1/completions",
                                      {"prompt": "Once upon a time", "max_tokens": 16})
            check(after == 200 and again["choices"][0]["text"] == first["choices"][0]["text"],
                  "the same greedy request answers differently after the load")
            _, metrics = ss.request(port, "GET", "/metrics")
            cancelled = ss.metric(metrics, "specd_cancelled_total")
            check(cancelled is not None and cancelled > 0, "no cancellation counted: %r" % cancelled)
            status = server.stop()
            check(status == 0, "SIGTERM: exit status %r" % status)
            if failures:
                print(server.log_text()[-4000:])
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
