"""Byte-level BPE tokenizer, GPT-2 style, compatible with llama.cpp's "gpt2" vocab type
and its "gpt-2" pre-tokenizer.

Vocabulary layout (ids):
  0            <s>   (BOS, control token, token_type 3)
  1            </s>  (EOS, control token, token_type 3)
  2 .. 257     the 256 single bytes, in byte order 0x00..0xFF, each written as its
               GPT-2 bytes_to_unicode() character
  258 ..       one token per merge, in merge order (token = concatenation of the pair)

Encoding (the standard GPT-2 algorithm):
  1. split text with PRETOKENIZE_RE (the `regex` module; the exact llama.cpp "gpt-2" regex);
  2. for each piece: UTF-8 bytes -> bytes_to_unicode characters -> list of 1-char symbols;
  3. repeatedly merge the adjacent pair with the lowest merge rank (leftmost occurrence
     first when the same pair occurs several times, all non-overlapping occurrences of that
     pair are merged in one pass left to right) until no pair has a rank;
  4. map symbols to ids.
Special tokens are never produced from plain text.
"""
import collections
import json
import regex

PRETOKENIZE = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PRETOKENIZE_RE = regex.compile(PRETOKENIZE)
BOS, EOS = "<s>", "</s>"
BOS_ID, EOS_ID = 0, 1
N_SPECIAL = 2


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE2U = bytes_to_unicode()
U2BYTE = {v: k for k, v in BYTE2U.items()}


def pretokenize(text):
    return PRETOKENIZE_RE.findall(text)


def word_to_syms(word):
    return "".join(BYTE2U[b] for b in word.encode("utf-8"))


def train_bpe(texts, vocab_size, log=print):
    """Word-frequency BPE with incrementally maintained pair counts. Deterministic:
    ties are broken by the lexicographically smallest pair (as strings)."""
    counts = collections.Counter()
    for t in texts:
        counts.update(pretokenize(t))
    words = []
    freqs = []
    for w, c in sorted(counts.items()):
        words.append(list(word_to_syms(w)))
        freqs.append(c)
    log(f"bpe: {len(words)} unique pre-tokens, {sum(freqs)} total")
    pair_counts = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for i, (w, f) in enumerate(zip(words, freqs)):
        for a, b in zip(w, w[1:]):
            pair_counts[(a, b)] += f
            where[(a, b)].add(i)
    n_merges = vocab_size - N_SPECIAL - 256
    merges = []
    import heapq
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        c = pair_counts.get(pair, 0)
        if c <= 0:
            continue
        if -negc != c:  # stale entry
            heapq.heappush(heap, (-c, pair))
            continue
        # ties: heap orders (-count, pair) so the smallest pair wins among equal counts
        merges.append(pair)
        a, b = pair
        new = a + b
        changed = set()
        for i in list(where[pair]):
            w = words[i]
            f = freqs[i]
            # remove old pair counts of this word
            for p in zip(w, w[1:]):
                pair_counts[p] -= f
                changed.add(p)
            j = 0
            out = []
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(new)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += f
                where[p].add(i)
                changed.add(p)
        del pair_counts[pair]
        where.pop(pair, None)
        for p in changed:
            c2 = pair_counts.get(p, 0)
            if c2 > 0:
                heapq.heappush(heap, (-c2, p))
            elif p in pair_counts:
                del pair_counts[p]
        if len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, last {pair!r} count {c}")
    return merges


class Tokenizer:
    def __init__(self, tokens, merges, token_types=None):
        self.tokens = list(tokens)
        self.merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
        self.ranks = {m: r for r, m in enumerate(self.merges)}
        self.tok2id = {t: i for i, t in enumerate(self.tokens)}
        self.token_types = token_types or [3 if i < N_SPECIAL else 1 for i in range(len(self.tokens))]
        self.bos_id, self.eos_id = BOS_ID, EOS_ID
        self.cache = {}

    @classmethod
    def from_merges(cls, merges):
        tokens = [BOS, EOS] + [BYTE2U[b] for b in range(256)] + [a + b for a, b in merges]
        return cls(tokens, merges)

    @classmethod
    def load(cls, path):
        with open(path) as f:
            d = json.load(f)
        return cls(d["tokens"], d["merges"], d.get("token_types"))

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"model": "gpt2", "pre": "gpt-2", "pretokenize_regex": PRETOKENIZE,
                       "bos_token_id": BOS_ID, "eos_token_id": EOS_ID,
                       "tokens": self.tokens, "token_types": self.token_types,
                       "merges": [a + " " + b for a, b in self.merges]}, f, ensure_ascii=False)

    @property
    def vocab_size(self):
        return len(self.tokens)

    def bpe(self, syms):
        word = list(syms)
        ranks = self.ranks
        while len(word) > 1:
            best, best_rank = None, None
            for p in zip(word, word[1:]):
                r = ranks.get(p)
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = p, r
            if best is None:
                break
            a, b = best
            out = []
            j = 0
            while j < len(word):
                if j + 1 < len(word) and word[j] == a and word[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(word[j])
                    j += 1
            word = out
        return word

    def encode(self, text, add_bos=False):
        ids = [self.bos_id] if add_bos else []
        cache = self.cache
        for piece in pretokenize(text):
            r = cache.get(piece)
            if r is None:
                r = [self.tok2id[s] for s in self.bpe(word_to_syms(piece))]
                if len(cache) < 500000:
                    cache[piece] = r
            ids.extend(r)
        return ids

    def decode(self, ids):
        bs = bytearray()
        for i in ids:
            if self.token_types[i] == 3:
                continue
            bs.extend(U2BYTE[c] for c in self.tokens[i])
        return bs.decode("utf-8", errors="replace")
