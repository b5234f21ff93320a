"""More references for the attention family's small plans (issue 19: rotary embeddings, ALiBi,
KV-cache append), beside ``tests/_attention_ref.py``, and a host stand-in for device memory that
the CPU tests use to run numpy mirrors of the kernels on the exact arguments a plan launches.

* :func:`rope_positions` — the table row of every token (position ids, or ``s + offset``).
* :func:`alibi_dslopes` — float64 ALiBi slope gradient.
* :func:`kv_append` — the expected caches after an append (contiguous or paged), bit-exact.
* :class:`FakeHeap` — numpy bytes at fake device addresses; arrays allocated there come back as
  a (TensorView, numpy view) pair, so a plan can be selected, bound and "launched" (with the
  ``launches`` fixture) without a GPU, and a mirror of the kernel reads and writes the numpy
  memory through the launch's pointers, checking every access stays inside an allocation.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np


# ------------------------------------------------------------------------------ references
def rope_positions(batch: int, seqlen: int, position_ids=None, seqlen_offset=0) -> np.ndarray:
    """(B, S) int64 table rows: ``position_ids`` as given, else ``s + seqlen_offset`` (an int or
    a (B,) sequence of per-sequence offsets)."""
    if position_ids is not None:
        return np.asarray(position_ids, np.int64).reshape(batch, seqlen)
    off = np.asarray(seqlen_offset, np.int64).reshape(-1, 1)
    return np.arange(seqlen, dtype=np.int64)[None, :] + np.broadcast_to(off, (batch, 1))


def alibi_distance(sq: int, sk: int, align: str = "bottom_right") -> np.ndarray:
    """(Sq, Sk) float64 ``|i + off − j|`` with ``off = Sk − Sq`` (bottom_right) or 0."""
    if align not in ("bottom_right", "top_left"):
        raise ValueError(f"align must be 'bottom_right' or 'top_left', got {align!r}")
    off = sk - sq if align == "bottom_right" else 0
    return np.abs(np.arange(sq)[:, None] + off - np.arange(sk)[None, :]).astype(np.float64)


def alibi_dslopes(dbias, batched: bool, align: str = "bottom_right") -> np.ndarray:
    """Float64 gradient of the slopes for the loss ``Σ bias·dbias`` with
    ``bias = −slope·dist``: (B, Hq) when ``batched`` (slopes (B, Hq)), else (Hq,) summed over
    the batch."""
    d = np.asarray(dbias, np.float64)
    dist = alibi_distance(d.shape[2], d.shape[3], align)
    g = -(d * dist[None, None]).sum(axis=(2, 3))          # (B, Hq)
    return g if batched else g.sum(axis=0)


def kv_append(k_cache, k_new, cache_seqlens, block_table=None) -> Tuple[np.ndarray, bool]:
    """(expected cache, whether some row fell outside it) after appending ``k_new`` (B, S_new,
    Hk, D) at positions ``cache_seqlens[b] + t``: a contiguous cache (B, S_max, Hk, D), or a
    paged one (num_pages, page_size, Hk, D) addressed through ``block_table`` (B, max_pages).
    Rows outside the cache (negative positions, past S_max / the block table, block-table
    entries outside [0, num_pages)) are skipped.  Bit-exact for every dtype (a copy)."""
    out = np.array(k_cache, copy=True)
    new = np.asarray(k_new)
    seq = np.asarray(cache_seqlens, np.int64)
    bad = False
    b_, s_new = new.shape[:2]
    for b in range(b_):
        for t in range(s_new):
            p = int(seq[b]) + t
            if p < 0:
                bad = True
                continue
            if block_table is None:
                if p >= out.shape[1]:
                    bad = True
                    continue
                out[b, p] = new[b, t]
                continue
            ps = out.shape[1]
            bt = np.asarray(block_table)
            if p // ps >= bt.shape[1]:
                bad = True
                continue
            page = int(bt[b, p // ps])
            if not 0 <= page < out.shape[0]:
                bad = True
                continue
            out[page, p % ps] = new[b, t]
    return out, bad


# ------------------------------------------------------------------------------- fake heap
def numpy_dtype(dt):
    """The numpy dtype doing arithmetic for a baracuda DType (bf16 / fp8 through ml_dtypes)."""
    import ml_dtypes

    name = getattr(dt, "name", str(dt))
    special = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3fn,
               "float8_e5m2": ml_dtypes.float8_e5m2}
    return np.dtype(special.get(name, name))


class FakeHeap:
    """Host bytes standing in for device memory at fake addresses ``BASE ..``.

    ``array`` allocates (256-byte aligned, optionally shifted by ``shift`` bytes to test
    misaligned operands) and returns ``(TensorView, numpy view)``; ``view`` turns a numpy view of
    heap memory (a slice of an allocated array) into a TensorView.  ``load`` / ``store`` read and
    write one element by address and assert the access lies inside one allocation."""

    BASE = 1 << 24

    def __init__(self, nbytes: int = 1 << 22):
        self.mem = np.zeros(nbytes, np.uint8)
        self.top = 0
        self.blocks = []

    def _alloc(self, nbytes: int) -> int:
        start = -(-self.top // 256) * 256
        end = start + max(int(nbytes), 1)
        if end > self.mem.size:
            raise MemoryError("FakeHeap exhausted")
        self.top = end
        self.blocks.append((self.BASE + start, self.BASE + end))
        return self.BASE + start

    def array(self, shape: Sequence[int], dtype, *, strides: Optional[Sequence[int]] = None,
              shift: int = 0, device: int = 0, fill=None):
        """(TensorView, numpy view) of a new array; ``strides`` in elements (non-negative;
        default row-major), ``shift`` extra bytes before it."""
        from baracuda_dsl.dtypes import dtype as as_dtype
        from baracuda_dsl.tensor import TensorView, contiguous_strides

        dt = as_dtype(dtype)
        npdt = numpy_dtype(dt)
        shape = tuple(int(n) for n in shape)
        strides = contiguous_strides(shape) if strides is None else tuple(strides)
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
        addr = self._alloc(shift + span * dt.itemsize + 16) + shift
        arr = np.ndarray(shape, dtype=npdt, buffer=self.mem, offset=addr - self.BASE,
                         strides=tuple(s * dt.itemsize for s in strides))
        if fill is not None and arr.size:
            arr[...] = fill
        return TensorView(addr, shape, strides, dt, device), arr

    def view(self, arr: np.ndarray, dtype, device: int = 0):
        """The TensorView of ``arr``, a numpy view into this heap's memory."""
        from baracuda_dsl.dtypes import dtype as as_dtype
        from baracuda_dsl.tensor import TensorView

        dt = as_dtype(dtype)
        base = self.mem.__array_interface__["data"][0]
        addr = arr.__array_interface__["data"][0] - base + self.BASE
        return TensorView(addr, arr.shape, tuple(s // dt.itemsize for s in arr.strides), dt,
                          device)

    def _check(self, addr: int, nbytes: int) -> int:
        for lo, hi in self.blocks:
            if lo <= addr and addr + nbytes <= hi:
                return addr - self.BASE
        raise AssertionError(f"access of {nbytes} bytes at {addr:#x} outside every allocation")

    def load(self, addr: int, npdt):
        npdt = np.dtype(npdt)
        o = self._check(addr, npdt.itemsize)
        return self.mem[o:o + npdt.itemsize].view(npdt)[0]

    def store(self, addr: int, npdt, value) -> None:
        npdt = np.dtype(npdt)
        o = self._check(addr, npdt.itemsize)
        self.mem[o:o + npdt.itemsize].view(npdt)[0] = value

    def load_bytes(self, addr: int, nbytes: int) -> bytes:
        o = self._check(addr, nbytes)
        return self.mem[o:o + nbytes].tobytes()

    def store_bytes(self, addr: int, data: bytes) -> None:
        o = self._check(addr, len(data))
        self.mem[o:o + len(data)] = np.frombuffer(data, np.uint8)
