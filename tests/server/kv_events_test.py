#!/usr/bin/env python3
"""KV-cache events ([server] kv_events_endpoint) as a prefix-aware router reads them:

  1. a subscriber rebuilds the prefix index from the events (vLLM's format: [topic,
     sequence, msgpack batch]) over a randomized workload of shared prefixes, in a KV budget
     small enough to evict; once the server is idle its index (GET /kv_events/blocks) equals
     the rebuilt one, with no sequence number missed;
  2. a second subscriber that drops every fifth batch recovers each through the replay
     socket and ends with the same index;
  3. the hashes of a prompt's full blocks, computed from its tokens alone (/tokenize and
     the chain hash of docs/SCALING.md), are in the index after the prompt ran;
  4. a prompt sent with a cache_salt is never published (no event carries its tokens).

Usage: kv_events_test.py SPECD [REQUESTS]  (exit 77 = skipped: no python3-zmq or
python3-msgpack, or no shipped models)
"""

import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "serve"))
import specd_server as ss  # noqa: E402
from specd_server import check, verdict, free_port, chain_hashes  # noqa: E402

try:
    import msgpack
    import zmq
except ImportError as e:
    print("skipped: %s (apt-get install python3-zmq python3-msgpack)" % e)
    sys.exit(77)

BLOCK = 16


class Subscriber(threading.Thread):
    """Rebuilds the index from the events; drops every `drop_every`-th batch on purpose and
    fills the gap from the replay socket."""

    def __init__(self, ctx, endpoint, replay_endpoint, drop_every=0):
        super().__init__(daemon=True)
        self.sub = ctx.socket(zmq.SUB)
        self.sub.connect(endpoint)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"kv-events")
        self.replay = ctx.socket(zmq.DEALER)
        self.replay.connect(replay_endpoint)
        self.drop_every = drop_every
        self.index = {}  # hash -> parent hash
        self.token_blocks = set()  # every stored block's tokens, as tuples
        self.last = -1
        self.missed = 0  # sequence numbers never recovered
        self.replayed = 0
        self.dropped = 0
        self.errors = []
        self.stop = False
        self.target = None  # set at the end: the batches to have; a gap at the end is filled

    def apply(self, payload):
        ts, events = msgpack.unpackb(payload, raw=False)
        if not isinstance(ts, float):
            self.errors.append("timestamp %r" % (ts,))
        for e in events:
            kind = e[0]
            if kind == "BlockStored":
                hashes, parent, tokens, block_size, lora, medium = e[1:]
                if block_size != BLOCK or len(tokens) != BLOCK * len(hashes) or lora is not None:
                    self.errors.append("BlockStored %r" % (e,))
                for i in range(len(hashes)):
                    self.token_blocks.add(tuple(tokens[i * BLOCK:(i + 1) * BLOCK]))
                for h in hashes:
                    if h in self.index:
                        self.errors.append("stored twice: %d" % h)
                    self.index[h] = parent
                    parent = h
            elif kind == "BlockRemoved":
                for h in e[1]:
                    if self.index.pop(h, None) is None and h not in self.index:
                        pass  # a block removed is one stored before (checked at the end)
            elif kind == "AllBlocksCleared":
                self.index.clear()
            else:
                self.errors.append("unknown event %r" % (e,))

    def fill(self, upto):
        """Batches last+1 .. upto-1 from the replay socket."""
        self.replay.send_multipart([b"", (self.last + 1).to_bytes(8, "big")])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not self.replay.poll(500):
                continue
            _, seq_bytes, payload = self.replay.recv_multipart()
            seq = int.from_bytes(seq_bytes, "big", signed=True)
            if seq < 0:
                break
            if seq == self.last + 1 and seq < upto:
                self.apply(payload)
                self.last = seq
                self.replayed += 1
        if self.last != upto - 1:
            self.missed += upto - 1 - self.last
            self.last = upto - 1

    def run(self):
        while not self.stop:
            if not self.sub.poll(50):
                # Nothing more comes: a batch dropped last is noticed only against the
                # number the server gives.
                if self.target is not None and self.last < self.target - 1:
                    self.fill(self.target)
                continue
            topic, seq_bytes, payload = self.sub.recv_multipart()
            seq = int.from_bytes(seq_bytes, "big")
            if topic != b"kv-events":
                self.errors.append("topic %r" % topic)
            if self.drop_every and seq % self.drop_every == self.drop_every - 1:
                self.dropped += 1
                continue  # as if the network lost it: the next batch finds the gap
            if seq > self.last + 1:
                self.fill(seq)
            if seq == self.last + 1:
                self.apply(payload)
                self.last = seq


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    specd = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    if not os.path.exists(os.path.join(ss.ROOT, "models", "target.gguf")):
        print("skipped: no shipped models")
        return 77
    rng = random.Random(7)
    pub, replay = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="specd-kv-events-")
    # 24 blocks of KV for 4 sequences: the cached prefixes are evicted again and again.
    config = ss.write_config(
        os.path.join(work, "serve.toml"),
        'kv_events_endpoint = "tcp://127.0.0.1:%d"\n'
        'kv_events_replay_endpoint = "tcp://127.0.0.1:%d"\n'
        "max_sequences = 4\nqueue_limit = 64\nkv_budget = 384\n" % (pub, replay),
        max_tokens=4)
    ctx = zmq.Context()
    subscribers = [
        Subscriber(ctx, "tcp://127.0.0.1:%d" % pub, "tcp://127.0.0.1:%d" % replay),
        Subscriber(ctx, "tcp://127.0.0.1:%d" % pub, "tcp://127.0.0.1:%d" % replay, drop_every=5),
    ]
    for s in subscribers:
        s.start()
    time.sleep(0.3)  # SUB connections are asynchronous: let them join before any event
    with ss.Server(specd, config) as server:
        prefixes = ["System %d: you are a careful assistant who answers with facts. " % i * 3
                    for i in range(6)]

        def client(n):
            for _ in range(n):
                prompt = rng.choice(prefixes) + " ".join(
                    rng.choice(["alpha", "beta", "gamma", "delta", "epsilon"])
                    for _ in range(rng.randint(1, 40)))
                status, body = ss.request(server.port, "POST", "/v1/completions",
                                          {"prompt": prompt, "max_tokens": rng.randint(1, 4)})
                check(status == 200, "completion: %s %s" % (status, body))

        threads = [threading.Thread(target=client, args=(requests // 4,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        # A known prompt: its full blocks' hashes, from its tokens alone, are indexed.
        prompt = prefixes[0] + "the last question"
        check(ss.request(server.port, "POST", "/v1/completions",
                         {"prompt": prompt, "max_tokens": 1})[0] == 200, "known prompt")
        _, tok = ss.request(server.port, "POST", "/tokenize",
                            {"content": prompt, "add_special": True})
        # Published: the full blocks of the prompt less its last token.
        expected = chain_hashes(tok["tokens"][:-1])
        # A salted prompt's blocks are never published (its tokens are that tenant's).
        salted = "Tenant secret: the vault code is " + " ".join(str(i) for i in range(40))
        check(ss.request(server.port, "POST", "/v1/completions",
                         {"prompt": salted, "max_tokens": 1, "cache_salt": "tenant-a"})[0] == 200,
              "salted prompt")
        _, salted_tok = ss.request(server.port, "POST", "/tokenize",
                                   {"content": salted, "add_special": True})
        salted_blocks = [tuple(salted_tok["tokens"][i:i + BLOCK])
                         for i in range(0, len(salted_tok["tokens"]) - BLOCK, BLOCK)]
        check(len(salted_blocks) >= 2, "the salted prompt is too short to fill blocks")

        status, blocks = ss.request(server.port, "GET", "/kv_events/blocks")
        check(status == 200, "GET /kv_events/blocks: %s %s" % (status, blocks))
        server_index = set(blocks["hashes"])
        sent = blocks["batches"]
        for h in expected:
            check(h in server_index, "a prompt block's chain hash %d is not indexed" % h)
        for s in subscribers:
            s.target = sent
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(s.last < sent - 1 for s in subscribers):
            time.sleep(0.05)
        for s in subscribers:
            s.stop = True
            s.join()
        _, metrics = ss.request(server.port, "GET", "/metrics")
        evictions = ss.metric(metrics, "specd_kv_evictions_total")
    for i, s in enumerate(subscribers):
        name = "subscriber %d" % i
        check(not s.errors, "%s: %s" % (name, s.errors[:3]))
        check(s.last == sent - 1, "%s: last sequence %d of %d" % (name, s.last, sent))
        check(s.missed == 0, "%s: %d sequence numbers missed" % (name, s.missed))
        check(set(s.index) == server_index,
              "%s: rebuilt %d blocks, the server has %d (%d differ)" %
              (name, len(s.index), len(server_index), len(set(s.index) ^ server_index)))
    for s in subscribers:
        check(not any(b in s.token_blocks for b in salted_blocks),
              "a salted prompt's tokens were published")
    check(subscribers[1].dropped > 0 and subscribers[1].replayed >= subscribers[1].dropped,
          "the dropping subscriber replayed %d of %d dropped batches" %
          (subscribers[1].replayed, subscribers[1].dropped))
    check(evictions > 0, "the workload evicted no block (kv_budget too large for the test)")
    print("%d requests, %d batches, %d blocks indexed, %d evictions; the dropping subscriber "
          "replayed %d batches" % (requests, sent, len(server_index), evictions,
                                   subscribers[1].replayed))
    ctx.destroy(linger=0)
    return verdict("kv_events_test")


if __name__ == "__main__":
    sys.exit(main())
