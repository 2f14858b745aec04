"""Minimal GGUF v3 writer and reader (numpy), llama.cpp conventions.

Layout: header (magic 'GGUF', u32 version=3, u64 n_tensors, u64 n_kv), KV pairs, tensor
infos (name, u32 n_dims, u64 ne[n_dims] fastest-first, u32 type, u64 offset relative to
the data section), padding to general.alignment, tensor data (each tensor's start
aligned to general.alignment). All little-endian.
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, \
    T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = range(13)
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32

_SCALAR = {T_UINT8: "<B", T_INT8: "<b", T_UINT16: "<H", T_INT16: "<h", T_UINT32: "<I",
           T_INT32: "<i", T_FLOAT32: "<f", T_BOOL: "<?", T_UINT64: "<Q", T_INT64: "<q",
           T_FLOAT64: "<d"}


class U32(int):
    pass


class I32(int):
    pass


class F32(float):
    pass


def _s(x: str):
    b = x.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _infer(v):
    if isinstance(v, bool):
        return T_BOOL
    if isinstance(v, I32):
        return T_INT32
    if isinstance(v, U32):
        return T_UINT32
    if isinstance(v, int):
        return T_UINT32 if 0 <= v < 2**32 else T_INT64
    if isinstance(v, float):
        return T_FLOAT32
    if isinstance(v, str):
        return T_STRING
    raise TypeError(type(v))


def _val(t, v):
    if t == T_STRING:
        return _s(v)
    return struct.pack(_SCALAR[t], v)


class GGUFWriter:
    def __init__(self):
        self.kv = []       # (key, type, value, elemtype)
        self.tensors = []  # (name, np.ndarray in torch shape order, ggml type)

    def add(self, key, value, typ=None):
        if isinstance(value, (list, tuple)):
            if typ is None:
                typ = _infer(value[0])
            self.kv.append((key, T_ARRAY, list(value), typ))
        else:
            self.kv.append((key, typ if typ is not None else _infer(value), value, None))

    def add_tensor(self, name, arr, ggml_type=None):
        """arr in PyTorch/numpy row-major shape [..., ne1, ne0]; stored with ne reversed.
        Default: 2-D -> F16, 1-D -> F32."""
        arr = np.asarray(arr)
        if ggml_type is None:
            ggml_type = GGML_F16 if arr.ndim >= 2 else GGML_F32
        dt = np.float16 if ggml_type == GGML_F16 else np.float32
        self.tensors.append((name, np.ascontiguousarray(arr.astype(dt)), ggml_type))

    def write(self, path):
        out = bytearray()
        out += GGUF_MAGIC + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        for key, t, v, et in self.kv:
            out += _s(key) + struct.pack("<I", t)
            if t == T_ARRAY:
                out += struct.pack("<IQ", et, len(v))
                if et == T_STRING:
                    for x in v:
                        out += _s(x)
                else:
                    out += np.asarray(v, dtype=np.dtype(_SCALAR[et])).tobytes()
            else:
                out += _val(t, v)
        offset = 0
        offsets = []
        for name, arr, gt in self.tensors:
            ne = list(reversed(arr.shape))
            out += _s(name) + struct.pack("<I", len(ne))
            out += struct.pack(f"<{len(ne)}Q", *ne)
            out += struct.pack("<IQ", gt, offset)
            offsets.append(offset)
            offset += arr.nbytes
            offset = (offset + ALIGN - 1) // ALIGN * ALIGN
        out += b"\0" * ((-len(out)) % ALIGN)
        data_start = len(out)
        for (name, arr, gt), off in zip(self.tensors, offsets):
            out += b"\0" * (data_start + off - len(out))
            out += arr.tobytes()
        with open(path, "wb") as f:
            f.write(out)


class GGUFReader:
    """Reads metadata (dict key -> value) and tensors (name -> dict(ne, type, data bytes,
    array as numpy in row-major [ne_{n-1},...,ne0] shape))."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        assert self._read(4) == GGUF_MAGIC, "not a GGUF file"
        self.version, n_t, n_kv = struct.unpack("<IQQ", self._read(20))
        assert self.version == 3
        self.meta = {}
        self.meta_types = {}
        for _ in range(n_kv):
            k = self._str()
            t = self._u32()
            if t == T_ARRAY:
                et = self._u32()
                n = struct.unpack("<Q", self._read(8))[0]
                if et == T_STRING:
                    v = [self._str() for _ in range(n)]
                else:
                    dt = np.dtype(_SCALAR[et])
                    v = np.frombuffer(self._read(n * dt.itemsize), dtype=dt).tolist()
                self.meta_types[k] = (T_ARRAY, et)
            else:
                v = self._scalar(t)
                self.meta_types[k] = (t, None)
            self.meta[k] = v
        infos = []
        for _ in range(n_t):
            name = self._str()
            nd = self._u32()
            ne = list(struct.unpack(f"<{nd}Q", self._read(8 * nd)))
            t = self._u32()
            off = struct.unpack("<Q", self._read(8))[0]
            infos.append((name, ne, t, off))
        align = int(self.meta.get("general.alignment", ALIGN))
        data_start = (self.pos + align - 1) // align * align
        self.tensors = {}
        for name, ne, t, off in infos:
            n = int(np.prod(ne))
            dt = {GGML_F32: np.float32, GGML_F16: np.float16}[t]
            start = data_start + off
            raw = self.buf[start:start + n * np.dtype(dt).itemsize]
            arr = np.frombuffer(raw, dtype=dt).reshape(list(reversed(ne)))
            self.tensors[name] = {"ne": ne, "type": t, "raw": raw, "array": arr}

    def _read(self, n):
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def _u32(self):
        return struct.unpack("<I", self._read(4))[0]

    def _str(self):
        n = struct.unpack("<Q", self._read(8))[0]
        return self._read(n).decode("utf-8")

    def _scalar(self, t):
        if t == T_STRING:
            return self._str()
        fmt = _SCALAR[t]
        return struct.unpack(fmt, self._read(struct.calcsize(fmt)))[0]

    def f32(self, name):
        return self.tensors[name]["array"].astype(np.float32)
