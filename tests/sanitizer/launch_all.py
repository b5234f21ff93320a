"""One small launch per kernel path of every op family, each checked loosely against numpy — the
driver that compute-sanitizer's racecheck / synccheck / initcheck (and memcheck) run over
(``tests/sanitizer/run.py``), useful on its own as a smoke test of a GPU host.

    python3 -m tests.sanitizer.launch_all                    # every case
    python3 -m tests.sanitizer.launch_all --family gemm,scan # some families
    python3 -m tests.sanitizer.launch_all --case gemm/sm90_cluster2
    python3 -m tests.sanitizer.launch_all --list             # what would run (no GPU needed)
    python3 -m tests.sanitizer.launch_all --dry-run          # no GPU: host memory, no-op kernels

Every case goes through the public API (``import array_api as xp`` and the Plans of
``baracuda_dsl``; no torch), synchronises the device when it is done and prints ONE line:

    LAUNCH <family>/<case> <ok|MISMATCH|ERROR|dry> <seconds>s kernels=<template[xN]>,... [detail]

``kernels=`` lists the kernel templates the case launched (``c2`` = a thread-block cluster of 2
CTAs, ``smem`` = dynamic shared memory), recorded at ``LoadedKernel.launch``.  Under
compute-sanitizer a report printed above a case's LAUNCH line belongs to that case (each case
ends with a device synchronisation, where the tools flush their reports).  The last lines are a
summary and a coverage table: every registered kernel template that uses shared memory or
clusters on sm90a, and whether a case launched it.  Exit status 1 if any case failed.

Sizes are small (a few thousand elements; GEMMs 256×256×256) except where a kernel path needs a
long row (row-norm / softmax / cross-entropy clusters and loop modes: one or two rows of 16K-300K
elements).  Kernels come from the prebuilt cache: run with ``BARACUDA_DSL_JIT=0`` on the GPU host
(a missing SKU is then an ERROR naming it instead of a compile).

``--pool exact`` (default): every namespace allocation is a fresh stream-ordered pool allocation
of exactly the bytes asked for, and freed arrays go back to the pool at once (the namespace's
per-size-class free lists are off: ``array_api._device.CACHE_LIMIT = 0`` and an exact size
class).  So memcheck sees each array's true end (a read past it is out of bounds, not into the
slack of a power-of-two block) and initcheck sees every output as fresh, never-written memory
(a reused block would carry the previous owner's bytes).  ``--pool cached`` keeps the
namespace's normal caching.

``--dry-run`` (for machines without a GPU): the namespace allocates host memory, plans select
for sm90a, kernels are stand-ins that check the argument pack against the SKU's ABI and record
the launch; numerical checks are skipped.  It validates every case's use of the API and the
kernel coverage without a device.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import traceback
import zlib
from dataclasses import dataclass
from typing import Callable, List

FAMILIES = ("normalization", "softmax", "reduction", "scan", "sorting", "histogram", "indexing",
            "segment", "losses", "random", "shape", "elementwise", "gemm", "attention", "pool")


@dataclass
class Case:
    family: str
    name: str
    fn: Callable
    doc: str

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


CASES: List[Case] = []


def case(family: str, name: str):
    """Register ``fn(t)`` as the case ``family/name`` (its docstring: the --list line)."""
    assert family in FAMILIES, family

    def deco(fn):
        doc = (fn.__doc__ or "").strip().splitlines()
        CASES.append(Case(family, name, fn, doc[0] if doc else ""))
        return fn

    return deco


# ================================================================================ helpers
def bf16_round(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32."""
    import numpy as np

    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32)


class CheckFailed(Exception):
    pass


class T:
    """What a case gets: the namespace (``xp``), the package (``bd``), numpy (``np``), a seeded
    numpy Generator (``g``) and helpers to upload, download, allocate workspaces and check."""

    def __init__(self, xp, bd, np, seed: int, dry: bool):
        self.xp, self.bd, self.np, self.dry = xp, bd, np, dry
        self.g = np.random.default_rng(seed)
        self.failures: List[str] = []
        self.notes: List[str] = []

    # -- data
    def dtype(self, name):
        return self.bd.dtypes.dtype(name) if isinstance(name, str) else name

    def up(self, a, dtype=None):
        """(device Array, float64/int host copy of exactly the device values) of numpy ``a``;
        ``dtype`` a half / fp8 dtype name rounds on the device (cast kernel) and reads back."""
        np, xp = self.np, self.xp
        a = np.asarray(a)
        if dtype is None:
            return xp.asarray(a), a
        dt = self.dtype(dtype)
        if dt.name == "bfloat16":
            r = bf16_round(a.astype(np.float32))
            return xp.astype(xp.asarray(r), dt), r.astype(np.float64)
        if dt.name == "float16":
            h = a.astype(np.float16)
            return xp.asarray(h), h.astype(np.float64)
        if dt.name.startswith("float8"):
            d = xp.astype(xp.asarray(a.astype(np.float32)), dt)
            back = self.host(d)                      # the values the cast produced
            return d, back
        return xp.asarray(a.astype(np.dtype(dt.numpy))), a.astype(np.dtype(dt.numpy))

    def randn(self, shape, dtype="float32", scale=1.0, shift=0.0):
        a = self.g.standard_normal(shape) * scale + shift
        return self.up(a.astype(self.np.float32) if dtype != "float64" else a, dtype)

    def uniform(self, shape, lo=0.0, hi=1.0, dtype="float32"):
        a = self.g.uniform(lo, hi, shape)
        return self.up(a.astype(self.np.float32) if dtype != "float64" else a, dtype)

    def ints(self, shape, lo, hi, dtype="int64"):
        a = self.g.integers(lo, hi, shape).astype(dtype)
        return self.xp.asarray(a), a

    def empty(self, shape, dtype="float32"):
        return self.xp.empty(tuple(shape), dtype=self.dtype(dtype))

    def host(self, x):
        """A numpy copy of Array ``x``: floats as float64 (half / fp8 through a device cast to
        float32), ints and bools as they are."""
        np, xp = self.np, self.xp
        if not isinstance(x, xp.Array):
            return np.asarray(x)
        if not x.is_contiguous():
            # to_numpy copies the whole span of a strided view, gaps included: under initcheck
            # never-written gaps would read as uninitialised, so gather the view on the device
            x = xp.ascontiguousarray(x)
        name = x.dtype.name
        if name in ("bfloat16",) or name.startswith("float8"):
            x = xp.astype(x, xp.float32)
            name = "float32"
        h = np.asarray(x.to_numpy())
        if name.startswith("float") or name.startswith("complex"):
            return h.astype(np.complex128 if name.startswith("complex") else np.float64)
        return h

    def ws(self, plan):
        """A workspace of ``plan.workspace_size()`` bytes from the namespace's pool (never
        initialised: the plan must write before it reads), or None."""
        n = plan.workspace_size()
        if not n:
            return None
        buf = self.xp.empty((n,), dtype=self.xp.uint8)
        return self.bd.Workspace(buf.__cuda_array_interface__["data"][0], n, buf)

    def run(self, plan, args):
        plan.run(args, workspace=self.ws(plan))
        return plan

    def pref(self, **gemm_tuning):
        from baracuda_dsl.ops.gemm import GemmTuning

        return self.bd.PlanPreference(tuning=(GemmTuning(**gemm_tuning),))

    def sync(self):
        if not self.dry:
            self.bd.runtime.synchronize()

    # -- checks (skipped in a dry run: the kernels are stand-ins there)
    def _fail(self, msg):
        self.failures.append(msg)

    def close(self, what, got, ref, rtol, atol=0.0, scale=None):
        """Every element: |got − ref| <= atol + rtol·max(|ref|, scale); NaN only where ref has
        NaN; same shape."""
        if self.dry:
            return
        np = self.np
        got = self.host(got)
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            return self._fail(f"{what}: shape {got.shape} != {ref.shape}")
        got = got.astype(np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(ref)
                         else np.float64)
        ref = ref.astype(got.dtype)
        mag = np.abs(ref) if scale is None else np.maximum(np.abs(ref), np.abs(scale))
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(got - ref) <= atol + rtol * mag)
        bad &= ~(np.isnan(got) & np.isnan(ref))
        bad |= np.isnan(got) != np.isnan(ref)
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            self._fail(f"{what}: {int(bad.sum())}/{bad.size} off (first at flat {i}: got "
                       f"{got.reshape(-1)[i]!r}, ref {ref.reshape(-1)[i]!r})")

    def equal(self, what, got, ref):
        if self.dry:
            return
        np = self.np
        got = self.host(got)
        ref = np.asarray(ref)
        if got.shape != ref.shape:
            return self._fail(f"{what}: shape {got.shape} != {ref.shape}")
        same = (got == ref) | ((got != got) & (ref != ref))
        if not same.all():
            i = int(np.flatnonzero(~same.reshape(-1))[0])
            self._fail(f"{what}: {int((~same).sum())}/{same.size} differ (first at flat {i}: "
                       f"got {got.reshape(-1)[i]!r}, ref {ref.reshape(-1)[i]!r})")

    def check(self, what, cond, detail=""):
        if not self.dry and not bool(cond):
            self._fail(f"{what} {detail}".strip())


# ============================================================================ references
def _np():
    import numpy as np

    return np


def ref_softmax(x, axis=-1, log=False):
    np = _np()
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def ref_rms(x, w, eps):
    np = _np()
    r = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * r * (1.0 if w is None else w), r.reshape(-1)


def ref_ln(x, w, b, eps):
    np = _np()
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    r = 1.0 / np.sqrt(var + eps)
    y = (x - mu) * r
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mu.reshape(-1), r.reshape(-1)


def ref_gelu(x):
    np = _np()
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


def ref_silu(x):
    np = _np()
    return x / (1.0 + np.exp(-x))


def gemm_scale(a, b):
    """|a| @ |b|: the magnitude a dot product's rounding error is relative to."""
    np = _np()
    return np.abs(a) @ np.abs(b)


# ================================================================================= cases
# Tolerances are loose on purpose (sanity checks: a wrong / unwritten element is off by O(1)):
# f32 results 1e-4 relative, bf16 outputs 2e-2, f32 sums over K terms relative to Σ|terms|.

# ------------------------------------------------------------------------- normalization
@case("normalization", "rms_fw_bucket")
def _(t):
    """RMSNorm forward, f32 (8, 1000) with weight and saved rstd: register-bucket SKU."""
    bd = t.bd
    x, xh = t.randn((8, 1000))
    w, wh = t.randn((1000,))
    y, rstd = t.empty((8, 1000)), t.empty((8,))
    t.run(bd.RMSNormPlan.select(bd.RMSNormDescriptor((8, 1000), 1, "f32", 1e-5, True)),
          bd.RMSNormArgs(x, y, weight=w, rstd=rstd))
    t.sync()
    yr, rr = ref_rms(xh, wh, 1e-5)
    t.close("y", y, yr, 1e-4, 1e-6)
    t.close("rstd", rstd, rr, 1e-5)


@case("normalization", "rms_fw_bf16_xp")
def _(t):
    """xp.rms_norm, bf16 (4, 4096) with weight (packed half pairs)."""
    x, xh = t.randn((4, 4096), "bfloat16")
    w, wh = t.randn((4096,), "bfloat16")
    y = t.xp.rms_norm(x, (4096,), w, eps=1e-6)
    t.sync()
    t.close("y", y, ref_rms(xh, wh, 1e-6)[0], 2e-2, 1e-2)


@case("normalization", "ln_fw_cluster")
def _(t):
    """LayerNorm forward, f32 (2, 40000): sm90a thread-block-cluster SKU (DSMEM exchange)."""
    bd = t.bd
    n = 40000
    x, xh = t.randn((2, n), shift=0.5)
    w, wh = t.randn((n,))
    b, bh = t.randn((n,))
    y, mean, rstd = t.empty((2, n)), t.empty((2,)), t.empty((2,))
    t.run(bd.LayerNormPlan.select(bd.LayerNormDescriptor((2, n), 1, "f32", 1e-5, True, True)),
          bd.LayerNormArgs(x, y, w, b, mean, rstd))
    t.sync()
    yr, mr, rr = ref_ln(xh, wh, bh, 1e-5)
    t.close("y", y, yr, 1e-4, 1e-5)
    t.close("mean", mean, mr, 1e-4, 1e-6)
    t.close("rstd", rstd, rr, 1e-4)


@case("normalization", "ln_fw_loop")
def _(t):
    """LayerNorm forward, f32 (1, 300001) without affine: the loop SKU (row re-read)."""
    bd = t.bd
    n = 300001
    x, xh = t.randn((1, n))
    y = t.empty((1, n))
    t.run(bd.LayerNormPlan.select(bd.LayerNormDescriptor((1, n), 1, "f32", 1e-5, False, False)),
          bd.LayerNormArgs(x, y))
    t.sync()
    t.close("y", y, ref_ln(xh, None, None, 1e-5)[0], 1e-4, 1e-5)


def _rms_bw(t, m, n):
    bd = t.bd
    x, xh = t.randn((m, n))
    w, wh = t.randn((n,))
    dy, dyh = t.randn((m, n))
    rstd, dx, dw = t.empty((m,)), t.empty((m, n)), t.empty((n,))
    t.run(bd.RMSNormPlan.select(bd.RMSNormDescriptor((m, n), 1, "f32", 1e-5, True)),
          bd.RMSNormArgs(x, t.empty((m, n)), weight=w, rstd=rstd))
    t.run(bd.RMSNormBackwardPlan.select(bd.RMSNormBackwardDescriptor((m, n), 1, "f32", True)),
          bd.RMSNormBackwardArgs(dy, x, rstd, dx, w, dw))
    t.sync()
    _, r = ref_rms(xh, None, 1e-5)
    r = r[:, None]
    xhat = xh * r
    g = dyh * wh
    dxr = r * (g - xhat * (g * xhat).mean(-1, keepdims=True))
    t.close("dx", dx, dxr, 1e-3, 1e-5)
    t.close("dw", dw, (dyh * xhat).sum(0), 1e-4, 0.0, scale=t.np.abs(dyh * xhat).sum(0))


@case("normalization", "rms_bw_bucket")
def _(t):
    """RMSNorm forward + backward, f32 (8, 1000): bucket SKUs, dweight partials + column_sum."""
    _rms_bw(t, 8, 1000)


@case("normalization", "rms_bw_cluster")
def _(t):
    """RMSNorm backward, f32 (2, 16384): the sm90a 2-CTA cluster backward SKU."""
    _rms_bw(t, 2, 16384)


@case("normalization", "rms_bw_loop")
def _(t):
    """RMSNorm backward, f32 (1, 100000): the backward loop SKU."""
    _rms_bw(t, 1, 100000)


@case("normalization", "ln_bw_bucket")
def _(t):
    """LayerNorm forward + backward with weight and bias, f32 (6, 2048)."""
    np, bd = t.np, t.bd
    m, n = 6, 2048
    x, xh = t.randn((m, n), shift=0.3)
    w, wh = t.randn((n,))
    b, _ = t.randn((n,))
    dy, dyh = t.randn((m, n))
    mean, rstd = t.empty((m,)), t.empty((m,))
    dx, dw, db = t.empty((m, n)), t.empty((n,)), t.empty((n,))
    t.run(bd.LayerNormPlan.select(bd.LayerNormDescriptor((m, n), 1, "f32", 1e-5, True, True)),
          bd.LayerNormArgs(x, t.empty((m, n)), w, b, mean, rstd))
    t.run(bd.LayerNormBackwardPlan.select(bd.LayerNormBackwardDescriptor((m, n), 1, "f32")),
          bd.LayerNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db))
    t.sync()
    _, mu, r = ref_ln(xh, None, None, 1e-5)
    xhat = (xh - mu[:, None]) * r[:, None]
    g = dyh * wh
    dxr = r[:, None] * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    t.close("dx", dx, dxr, 1e-3, 1e-5)
    t.close("dw", dw, (dyh * xhat).sum(0), 1e-4, 1e-5)
    t.close("db", db, dyh.sum(0), 1e-4, 0.0, scale=np.abs(dyh).sum(0))


def _group_ref(xh, groups, w, b, eps):
    np = _np()
    n, c = xh.shape[:2]
    xg = xh.reshape(n, groups, -1)
    mu = xg.mean(-1, keepdims=True)
    r = 1.0 / np.sqrt(((xg - mu) ** 2).mean(-1, keepdims=True) + eps)
    xhat = ((xg - mu) * r).reshape(xh.shape)
    shp = (1, c) + (1,) * (xh.ndim - 2)
    return xhat * w.reshape(shp) + b.reshape(shp), xhat, mu.reshape(n, groups), r.reshape(n, groups)


@case("normalization", "group_norm_fw_xp")
def _(t):
    """xp.group_norm, f32 (2, 6, 10, 10), 3 groups, weight + bias (per-channel affine rows)."""
    x, xh = t.randn((2, 6, 10, 10), shift=1.0)
    w, wh = t.randn((6,))
    b, bh = t.randn((6,))
    y = t.xp.group_norm(x, 3, w, b, eps=1e-5)
    t.sync()
    t.close("y", y, _group_ref(xh, 3, wh, bh, 1e-5)[0], 1e-4, 1e-5)


@case("normalization", "group_norm_bw")
def _(t):
    """GroupNorm forward (saved stats) + backward plans, f32 (2, 6, 7, 9), 3 groups."""
    np, bd = t.np, t.bd
    shape = (2, 6, 7, 9)
    x, xh = t.randn(shape, shift=0.5)
    w, wh = t.randn((6,))
    b, bh = t.randn((6,))
    dy, dyh = t.randn(shape)
    mean, rstd = t.empty((2, 3)), t.empty((2, 3))
    t.run(bd.GroupNormPlan.select(bd.GroupNormDescriptor(shape, 3, "f32", 1e-5)),
          bd.GroupNormArgs(x, t.empty(shape), w, b, mean, rstd))
    dx, dw, db = t.empty(shape), t.empty((6,)), t.empty((6,))
    t.run(bd.GroupNormBackwardPlan.select(bd.GroupNormBackwardDescriptor(shape, 3, "f32")),
          bd.GroupNormBackwardArgs(dy, x, mean, rstd, dx, w, dw, db))
    t.sync()
    _, xhat, mu, r = _group_ref(xh, 3, wh, bh, 1e-5)
    t.close("mean", mean, mu, 1e-4, 1e-6)
    t.close("rstd", rstd, r, 1e-4)
    gg = (dyh * wh.reshape(1, 6, 1, 1)).reshape(2, 3, -1)
    xg = xhat.reshape(2, 3, -1)
    dxr = (r[..., None] * (gg - gg.mean(-1, keepdims=True)
                           - xg * (gg * xg).mean(-1, keepdims=True))).reshape(shape)
    t.close("dx", dx, dxr, 1e-3, 1e-5)
    t.close("dw", dw, (dyh * xhat).sum((0, 2, 3)), 1e-4, 1e-5)
    t.close("db", db, dyh.sum((0, 2, 3)), 1e-4, 0.0, scale=np.abs(dyh).sum((0, 2, 3)))


@case("normalization", "batch_norm_train_xp")
def _(t):
    """xp.batch_norm training, f32 (8, 4, 6, 6), running stats updated in place."""
    np, xp = t.np, t.xp
    x, xh = t.randn((8, 4, 6, 6), scale=2.0, shift=1.0)
    w, wh = t.randn((4,))
    b, bh = t.randn((4,))
    rm, rv = xp.zeros((4,), dtype=xp.float32), xp.ones((4,), dtype=xp.float32)
    y = xp.batch_norm(x, rm, rv, w, b, training=True, momentum=0.1, eps=1e-5)
    t.sync()
    mu = xh.mean((0, 2, 3))
    var = xh.var((0, 2, 3))
    yr = ((xh - mu.reshape(1, 4, 1, 1)) / np.sqrt(var.reshape(1, 4, 1, 1) + 1e-5)
          * wh.reshape(1, 4, 1, 1) + bh.reshape(1, 4, 1, 1))
    t.close("y", y, yr, 1e-4, 1e-5)
    t.close("running_mean", rm, 0.1 * mu, 1e-4, 1e-6)
    t.close("running_var", rv, 0.9 + 0.1 * xh.var((0, 2, 3), ddof=1), 1e-4)


@case("normalization", "batch_norm_bw")
def _(t):
    """BatchNorm training forward (saved stats) + backward plans, f32 (6, 3, 5, 7)."""
    np, bd = t.np, t.bd
    shape = (6, 3, 5, 7)
    x, xh = t.randn(shape, shift=0.5)
    w, wh = t.randn((3,))
    b, _ = t.randn((3,))
    dy, dyh = t.randn(shape)
    sm, sr = t.empty((3,)), t.empty((3,))
    t.run(bd.BatchNormPlan.select(bd.BatchNormDescriptor(shape, "f32", track_running_stats=False)),
          bd.BatchNormArgs(x, t.empty(shape), w, b, save_mean=sm, save_rstd=sr))
    dx, dw, db = t.empty(shape), t.empty((3,)), t.empty((3,))
    t.run(bd.BatchNormBackwardPlan.select(bd.BatchNormBackwardDescriptor(shape, "f32")),
          bd.BatchNormBackwardArgs(dy, x, dx, w, sm, sr, dweight=dw, dbias=db))
    t.sync()
    mu = xh.mean((0, 2, 3)).reshape(1, 3, 1, 1)
    r = 1.0 / np.sqrt(xh.var((0, 2, 3)).reshape(1, 3, 1, 1) + 1e-5)
    xhat = (xh - mu) * r
    g = dyh * wh.reshape(1, 3, 1, 1)
    dxr = r * (g - g.mean((0, 2, 3), keepdims=True)
               - xhat * (g * xhat).mean((0, 2, 3), keepdims=True))
    t.close("save_mean", sm, mu.reshape(-1), 1e-4, 1e-6)
    t.close("dx", dx, dxr, 1e-3, 1e-5)
    t.close("dw", dw, (dyh * xhat).sum((0, 2, 3)), 1e-4, 1e-5)
    t.close("db", db, dyh.sum((0, 2, 3)), 1e-4, 0.0, scale=np.abs(dyh).sum((0, 2, 3)))


@case("normalization", "instance_norm_xp")
def _(t):
    """xp.instance_norm, f32 (3, 4, 50): one row per (sample, channel)."""
    np = t.np
    x, xh = t.randn((3, 4, 50), shift=2.0)
    y = t.xp.instance_norm(x)
    t.sync()
    mu = xh.mean(-1, keepdims=True)
    t.close("y", y, (xh - mu) / np.sqrt(xh.var(-1, keepdims=True) + 1e-5), 1e-4, 1e-5)


# ------------------------------------------------------------------------------- softmax
def _softmax_fw(t, shape, log=False, dtype="float32"):
    bd = t.bd
    x, xh = t.randn(shape, dtype, scale=3.0)
    y = t.empty(shape, dtype)
    t.run(bd.SoftmaxPlan.select(bd.SoftmaxDescriptor(shape, dtype, log=log)),
          bd.SoftmaxArgs(x, y))
    t.sync()
    tol = 2e-2 if dtype == "bfloat16" else 1e-4
    t.close("y", y, ref_softmax(xh, log=log), tol, 1e-6 if not log else tol)


def _softmax_bw(t, shape, log=False):
    np, bd = t.np, t.bd
    x, xh = t.randn(shape, scale=2.0)
    yh = ref_softmax(xh, log=log)
    y, yh = t.up(yh.astype(np.float32))
    dy, dyh = t.randn(shape)
    dx = t.empty(shape)
    t.run(bd.SoftmaxBackwardPlan.select(bd.SoftmaxBackwardDescriptor(shape, "f32", log=log)),
          bd.SoftmaxBackwardArgs(dy, y, dx))
    t.sync()
    if log:
        ref = dyh - np.exp(yh) * dyh.sum(-1, keepdims=True)
    else:
        ref = yh * (dyh - (dyh * yh).sum(-1, keepdims=True))
    t.close("dx", dx, ref, 1e-3, 1e-6)


@case("softmax", "fw_bucket")
def _(t):
    """Softmax forward, f32 (8, 1000): register bucket."""
    _softmax_fw(t, (8, 1000))


@case("softmax", "log_fw_bf16_odd")
def _(t):
    """log_softmax forward, bf16 (4, 4097): odd row length (generic / misaligned rows)."""
    _softmax_fw(t, (4, 4097), log=True, dtype="bfloat16")


@case("softmax", "fw_cluster")
def _(t):
    """Softmax forward, f32 (2, 70000): sm90a cluster SKU (online max/Σexp across CTAs)."""
    _softmax_fw(t, (2, 70000))


@case("softmax", "fw_loop")
def _(t):
    """Softmax forward, f32 (1, 300000): the loop SKU."""
    _softmax_fw(t, (1, 300000))


@case("softmax", "bw_bucket")
def _(t):
    """Softmax backward, f32 (8, 1000)."""
    _softmax_bw(t, (8, 1000))


@case("softmax", "log_bw_bucket")
def _(t):
    """log_softmax backward, f32 (5, 3000)."""
    _softmax_bw(t, (5, 3000), log=True)


@case("softmax", "bw_cluster")
def _(t):
    """Softmax backward, f32 (2, 70000): sm90a cluster SKU."""
    _softmax_bw(t, (2, 70000))


@case("softmax", "sparsemax_fw_bw")
def _(t):
    """Sparsemax forward + backward plans, f32 (6, 1000)."""
    np, bd = t.np, t.bd
    shape = (6, 1000)
    x, xh = t.randn(shape, scale=3.0)
    y, dx = t.empty(shape), t.empty(shape)
    dy, dyh = t.randn(shape)
    t.run(bd.SparsemaxPlan.select(bd.SparsemaxDescriptor(shape, "f32")), bd.SparsemaxArgs(x, y))
    t.run(bd.SparsemaxBackwardPlan.select(bd.SparsemaxBackwardDescriptor(shape, "f32")),
          bd.SparsemaxBackwardArgs(dy, y, dx))
    t.sync()
    z = -np.sort(-xh, axis=-1)
    cs = z.cumsum(-1)
    ks = np.arange(1, shape[1] + 1)
    k = ((1 + ks * z) > cs).sum(-1, keepdims=True)
    tau = (np.take_along_axis(cs, k - 1, -1) - 1) / k
    yr = np.maximum(xh - tau, 0)
    t.close("y", y, yr, 1e-4, 1e-5)
    s = yr > 0
    dxr = np.where(s, dyh - (dyh * s).sum(-1, keepdims=True) / s.sum(-1, keepdims=True), 0.0)
    t.close("dx", dx, dxr, 1e-3, 1e-5)


@case("softmax", "gumbel_softmax_xp")
def _(t):
    """xp.gumbel_softmax, f32 (16, 100): Gumbel draw + fma + softmax; rows sum to 1."""
    np = t.np
    x, _ = t.randn((16, 100))
    y = t.xp.gumbel_softmax(x, tau=0.5, generator=t.xp.random.default_rng(7))
    t.sync()
    yh = t.host(y)
    t.check("rows sum to 1", np.allclose(yh.sum(-1), 1.0, atol=1e-4), f"{yh.sum(-1)[:3]}")
    t.check("in [0, 1]", ((yh >= 0) & (yh <= 1)).all())


# ----------------------------------------------------------------------------- reduction
@case("reduction", "sum_last_axis")
def _(t):
    """xp.sum over the last axis, f32 (64, 1000): threads-per-output > 1 (shared-memory tree)."""
    x, xh = t.randn((64, 1000))
    s = t.xp.sum(x, axis=1)
    t.sync()
    t.close("sum", s, xh.sum(1), 1e-5, 0.0, scale=t.np.abs(xh).sum(1))


@case("reduction", "sum_axis0")
def _(t):
    """xp.sum over axis 0, f32 (1000, 64): a column reduction."""
    x, xh = t.randn((1000, 64))
    s = t.xp.sum(x, axis=0)
    t.sync()
    t.close("sum", s, xh.sum(0), 1e-5, 0.0, scale=t.np.abs(xh).sum(0))


@case("reduction", "sum_full_two_pass")
def _(t):
    """xp.sum of a (200000,) f32 vector: the two-pass split (few outputs, long reduction)."""
    x, xh = t.randn((200000,))
    s = t.xp.sum(x)
    t.sync()
    t.close("sum", s, xh.sum(), 1e-5, 0.0, scale=t.np.abs(xh).sum())


@case("reduction", "max_argmax_bf16")
def _(t):
    """xp.max and xp.argmax over axis 1, bf16 (32, 777)."""
    x, xh = t.randn((32, 777), "bfloat16")
    m, i = t.xp.max(x, axis=1), t.xp.argmax(x, axis=1)
    t.sync()
    t.equal("max", m, xh.max(1))
    t.equal("argmax", i, xh.argmax(1))


@case("reduction", "std_logsumexp")
def _(t):
    """xp.std (composite: mean, squared deviations, sum) and xp.logsumexp, f32 (50, 300)."""
    np = t.np
    x, xh = t.randn((50, 300), scale=2.0)
    s, l = t.xp.std(x, axis=0, correction=1), t.xp.logsumexp(x, axis=1)
    t.sync()
    t.close("std", s, xh.std(0, ddof=1), 1e-4)
    m = xh.max(1, keepdims=True)
    t.close("logsumexp", l, (m + np.log(np.exp(xh - m).sum(1, keepdims=True))).reshape(-1), 1e-5)


@case("reduction", "count_any_int")
def _(t):
    """xp.count_nonzero and xp.any over axes, int32 (40, 60) (count / bool reductions)."""
    np = t.np
    x, xh = t.ints((40, 60), -2, 3, "int32")
    c, a = t.xp.count_nonzero(x, axis=1), t.xp.any(x == 2, axis=0)
    t.sync()
    t.equal("count", c, np.count_nonzero(xh, axis=1))
    t.equal("any", a, (xh == 2).any(0))


# ---------------------------------------------------------------------------------- scan
@case("scan", "cumsum_rows")
def _(t):
    """xp.cumulative_sum along axis 1, f32 (8, 1000): CTA per row, block scan with carry."""
    x, xh = t.randn((8, 1000))
    c = t.xp.cumulative_sum(x, axis=1)
    t.sync()
    t.close("cumsum", c, xh.cumsum(1), 1e-5, 0.0, scale=t.np.abs(xh).cumsum(1))


@case("scan", "cumsum_long_row")
def _(t):
    """xp.cumulative_sum of one long row, f32 (1, 200000): chunked (few long rows)."""
    x, xh = t.randn((1, 200000))
    c = t.xp.cumulative_sum(x, axis=1, include_initial=True)
    t.sync()
    np = t.np
    ref = np.concatenate([np.zeros((1, 1)), xh.cumsum(1)], 1)
    t.close("cumsum", c, ref, 1e-5, 0.0,
            scale=np.concatenate([np.zeros((1, 1)), np.abs(xh).cumsum(1)], 1))


@case("scan", "cumsum_axis0_int")
def _(t):
    """xp.cumulative_sum along axis 0, int32 (1000, 12): the column path, exact."""
    x, xh = t.ints((1000, 12), -50, 50, "int32")
    c = t.xp.cumulative_sum(x, axis=0)
    t.sync()
    t.equal("cumsum", c, xh.cumsum(0).astype(xh.dtype))


@case("scan", "cummax_reverse_cumprod")
def _(t):
    """xp.cummax (values + indices), reverse cumsum, cumprod and logcumsumexp, f32 (6, 500)."""
    np, xp = t.np, t.xp
    x, xh = t.randn((6, 500))
    v, i = xp.cummax(x, axis=1)
    r = xp.cumsum(x, axis=1, reverse=True)
    p = xp.cumprod(x[:, :20], axis=1)
    l = xp.logcumsumexp(x, axis=1)
    t.sync()
    t.equal("cummax", v, np.maximum.accumulate(xh, 1))
    t.check("cummax idx", (np.take_along_axis(xh, t.host(i), 1) == t.host(v)).all())
    rr = xh[:, ::-1].cumsum(1)[:, ::-1]
    t.close("reverse", r, rr, 1e-5, 0.0, scale=np.abs(xh)[:, ::-1].cumsum(1)[:, ::-1])
    t.close("cumprod", p, xh[:, :20].cumprod(1), 1e-5, 1e-30)
    t.close("logcumsumexp", l, np.logaddexp.accumulate(xh, 1), 1e-5, 1e-6)


@case("scan", "scan_bw")
def _(t):
    """ScanBackwardPlan for cumsum, f32 (4, 3000): a reverse scan of dy."""
    bd, np = t.bd, t.np
    dy, dyh = t.randn((4, 3000))
    dx = t.empty((4, 3000))
    t.run(bd.ScanBackwardPlan.select(bd.ScanBackwardDescriptor((4, 3000), 1, "cumsum", "f32")),
          bd.ScanBackwardArgs(dy, dx))
    t.sync()
    t.close("dx", dx, dyh[:, ::-1].cumsum(1)[:, ::-1], 1e-5, 0.0,
            scale=np.abs(dyh)[:, ::-1].cumsum(1)[:, ::-1])


@case("scan", "nonzero_compact")
def _(t):
    """xp.nonzero of a (64, 100) mask: CompactPlan (scan + scatter of coordinates)."""
    np = t.np
    x, xh = t.ints((64, 100), 0, 4, "int32")
    r, c = t.xp.nonzero(x == 0)
    t.sync()
    rr, cr = np.nonzero(xh == 0)
    t.equal("rows", r, rr)
    t.equal("cols", c, cr)


# ------------------------------------------------------------------------------- sorting
@case("sorting", "sort_rows_bitonic")
def _(t):
    """xp.sort along rows ≤ 4096, f32 (8, 1000), ascending and descending: bitonic in smem."""
    np, xp = t.np, t.xp
    x, xh = t.randn((8, 1000))
    a, d = xp.sort(x, axis=1), xp.sort(x, axis=1, descending=True)
    t.sync()
    t.equal("ascending", a, np.sort(xh, 1))
    t.equal("descending", d, -np.sort(-xh, 1))


@case("sorting", "argsort_rows_bf16")
def _(t):
    """xp.argsort (stable), bf16 (16, 333) with ties: bitonic with indices."""
    np = t.np
    x, xh = t.up(t.g.integers(-20, 20, (16, 333)).astype(np.float32) / 4, "bfloat16")
    i = t.xp.argsort(x, axis=1)
    t.sync()
    t.equal("argsort", i, np.argsort(xh, axis=1, kind="stable"))


@case("sorting", "sort_radix_long_row")
def _(t):
    """xp.sort of a (1, 20000) f32 row: segmented LSD radix sort (histograms, scan, scatter)."""
    x, xh = t.randn((1, 20000))
    s = t.xp.sort(x, axis=1)
    t.sync()
    t.equal("sort", s, t.np.sort(xh, 1))


@case("sorting", "argsort_radix_int64")
def _(t):
    """xp.argsort of a (2, 9000) int64 array with ties: radix sort with indices (stable)."""
    np = t.np
    x, xh = t.ints((2, 9000), -1000, 1000)
    i = t.xp.argsort(x, axis=1)
    t.sync()
    t.equal("argsort", i, np.argsort(xh, axis=1, kind="stable"))


@case("sorting", "topk_kthvalue")
def _(t):
    """xp.topk (k=10) and xp.kthvalue (k=100), f32 (8, 1000): per-row radix select."""
    np, xp = t.np, t.xp
    x, xh = t.randn((8, 1000))
    v, i = xp.topk(x, 10, axis=1)
    kv, ki = xp.kthvalue(x, 100, axis=1)
    t.sync()
    t.equal("topk values", v, -np.sort(-xh, 1)[:, :10])
    t.check("topk indices", (np.take_along_axis(xh, t.host(i), 1) == t.host(v)).all())
    t.equal("kthvalue", kv, np.sort(xh, 1)[:, 99])
    t.check("kthvalue index", (np.take_along_axis(xh, t.host(ki)[:, None], 1)[:, 0]
                               == t.host(kv)).all())


@case("sorting", "sort_backward")
def _(t):
    """SortPlan (values + indices) then SortBackwardPlan (scatter dy back), f32 (4, 500)."""
    np, bd = t.np, t.bd
    x, xh = t.randn((4, 500))
    v, idx = t.empty((4, 500)), t.empty((4, 500), "int64")
    t.run(bd.SortPlan.select(bd.SortDescriptor((4, 500), -1, "f32")), bd.SortArgs(x, v, idx))
    dy, dyh = t.randn((4, 500))
    dx = t.empty((4, 500))
    t.run(bd.SortBackwardPlan.select(bd.SortBackwardDescriptor((4, 500), -1, "f32")),
          bd.SortBackwardArgs(dy, idx, dx))
    t.sync()
    order = np.argsort(xh, 1, kind="stable")
    ref = np.zeros_like(dyh)
    np.put_along_axis(ref, order, dyh, 1)
    t.equal("values", v, np.sort(xh, 1))
    t.equal("dx", dx, ref)


@case("sorting", "unique_all")
def _(t):
    """xp.unique_all of 6000 int32 values: sort → flags → compact → gathers → scan."""
    np = t.np
    x, xh = t.ints((6000,), 0, 500, "int32")
    r = t.xp.unique_all(x)
    t.sync()
    vals, idx, inv, cnt = np.unique(xh, return_index=True, return_inverse=True,
                                    return_counts=True)
    t.equal("values", r.values, vals)
    t.equal("indices", r.indices, idx)
    t.equal("inverse", r.inverse_indices, inv.reshape(xh.shape))
    t.equal("counts", r.counts, cnt)


@case("sorting", "unique_consecutive_msort")
def _(t):
    """xp.unique_consecutive (counts) and xp.msort (sort along axis 0), small int / f32."""
    np, xp = t.np, t.xp
    x, xh = t.ints((3000,), 0, 3, "int64")
    v, c = xp.unique_consecutive(x, return_counts=True)
    y, yh = t.randn((300, 5))
    s = xp.msort(y)
    t.sync()
    brk = np.flatnonzero(np.diff(xh)) + 1
    starts = np.concatenate([[0], brk])
    t.equal("values", v, xh[starts])
    t.equal("counts", c, np.diff(np.concatenate([starts, [xh.size]])))
    t.equal("msort", s, np.sort(yh, 0))


@case("sorting", "searchsorted")
def _(t):
    """xp.searchsorted of 3000 queries in 1000 sorted f32 boundaries, left and right."""
    np, xp = t.np, t.xp
    bh = np.sort(t.g.standard_normal(1000).astype(np.float32))
    bh[100:110] = bh[100]                     # ties
    b, bh = t.up(bh)
    q, qh = t.up(np.concatenate([t.g.standard_normal(2990).astype(np.float32), bh[100:110]]))
    lft, rgt = xp.searchsorted(b, q), xp.searchsorted(b, q, side="right")
    t.sync()
    t.equal("left", lft, np.searchsorted(bh, qh, side="left"))
    t.equal("right", rgt, np.searchsorted(bh, qh, side="right"))


# ----------------------------------------------------------------------------- histogram
@case("histogram", "bincount")
def _(t):
    """xp.bincount of 5000 int64 values < 100, plain and weighted (shared-memory histogram)."""
    np, xp = t.np, t.xp
    x, xh = t.ints((5000,), 0, 100)
    w, wh = t.uniform((5000,), dtype="float64")
    c, cw = xp.bincount(x), xp.bincount(x, weights=w)
    t.sync()
    t.equal("counts", c, np.bincount(xh))
    t.close("weighted", cw, np.bincount(xh, weights=wh), 1e-9)


@case("histogram", "histogram_uniform_edges")
def _(t):
    """xp.histogram with uniform bins over a range and with an explicit edge array; xp.histc."""
    np, xp = t.np, t.xp
    x, xh = t.randn((4000,))
    h, _ = xp.histogram(x, bins=16, range=(-2.0, 2.0))
    edges = np.array([-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 3.0])
    h2, _ = xp.histogram(x, bins=xp.asarray(edges))
    hc = xp.histc(x, bins=20, min=-1.0, max=1.0)
    t.sync()
    # uniform bins: a value within an ulp of an edge may land in the neighbouring bin when the
    # kernel computes the bin in another precision than numpy: counts within 1 (totals exact)
    ru = np.histogram(xh, bins=16, range=(-2.0, 2.0))[0]
    t.close("uniform", h, ru, 0.0, 1.0)
    t.equal("uniform total", xp.sum(h), ru.sum())
    t.equal("edges", h2, np.histogram(xh, bins=edges)[0])
    inside = xh[(xh >= -1.0) & (xh <= 1.0)]
    rc = np.histogram(inside, bins=20, range=(-1.0, 1.0))[0].astype(np.float64)
    t.close("histc", hc, rc, 0.0, 1.0)
    t.equal("histc total", xp.sum(hc), rc.sum())


# ------------------------------------------------------------------------------ indexing
@case("indexing", "take_index_select")
def _(t):
    """xp.take along axis 0 (whole rows) and flat, xp.index_select along axis 1, f32 (50, 40)."""
    xp = t.xp
    x, xh = t.randn((50, 40))
    i, ih = t.ints((70,), -50, 50)
    j, jh = t.ints((30,), 0, 40)
    a, b, c = xp.take(x, i, axis=0), xp.index_select(x, 1, j), xp.take(xp.reshape(x, (-1,)), j)
    t.sync()
    t.equal("take rows", a, xh[ih])
    t.equal("index_select", b, xh[:, jh])
    t.equal("take flat", c, xh.reshape(-1)[jh])


@case("indexing", "gather_scatter")
def _(t):
    """xp.take_along_axis / gather, xp.scatter (assign) and xp.scatter_add, f32 (20, 30)."""
    np, xp = t.np, t.xp
    x, xh = t.randn((20, 30))
    i, ih = t.ints((20, 12), 0, 30)
    g1 = xp.take_along_axis(x, i, axis=1)
    g2 = xp.gather(x, 1, i)
    perm = np.stack([t.g.permutation(30)[:12] for _ in range(20)])   # distinct targets per row
    p, _ = t.up(perm.astype(np.int64))
    src, sh = t.randn((20, 12))
    s = xp.scatter(x, 1, p, src)
    sa = xp.scatter_add(x, 1, i, src)
    t.sync()
    ref_g = np.take_along_axis(xh, ih, 1)
    t.equal("take_along_axis", g1, ref_g)
    t.equal("gather", g2, ref_g)
    rs = xh.copy()
    np.put_along_axis(rs, perm, sh, 1)
    t.equal("scatter", s, rs)
    ra = xh.copy()
    for r in range(20):
        np.add.at(ra[r], ih[r], sh[r])
    t.close("scatter_add", sa, ra, 1e-5, 1e-6)


@case("indexing", "one_hot_masked_fill")
def _(t):
    """xp.one_hot (int64 out) and xp.masked_fill with a broadcast mask."""
    np, xp = t.np, t.xp
    i, ih = t.ints((300,), 0, 17)
    oh = xp.one_hot(i, 17)
    x, xh = t.randn((30, 40))
    m, mh = t.up(t.g.random(40) < 0.5)
    mf = xp.masked_fill(x, m, -7.0)
    t.sync()
    t.equal("one_hot", oh, np.eye(17, dtype=np.int64)[ih])
    t.equal("masked_fill", mf, np.where(mh, -7.0, xh).astype(np.float32))


@case("indexing", "advanced_get_set")
def _(t):
    """Integer-array and boolean-mask __getitem__ / __setitem__ on an f32 (40, 50) array."""
    np, xp = t.np, t.xp
    x, xh = t.randn((40, 50))
    i, ih = t.ints((25,), -40, 40)
    a = x[i]
    b = x[x > 1.0]
    y = xp.asarray(x, copy=True)
    j = t.g.permutation(40)[:10]
    jj, _ = t.up(j.astype(np.int64))
    y[jj] = 3.5
    y[y < -1.5] = 0.0
    t.sync()
    t.equal("x[int array]", a, xh[ih])
    t.equal("x[mask]", b, xh[xh > 1.0])
    yr = xh.copy()
    yr[j] = 3.5
    yr[yr < -1.5] = 0.0
    t.equal("setitem", y, yr)


# ------------------------------------------------------------------------------- segment
@case("segment", "segment_sum_unsorted")
def _(t):
    """xp.segment_sum with unsorted ids, f32 (1000, 16) → 37 segments (radix sort + offsets)."""
    np = t.np
    d, dh = t.randn((1000, 16))
    s, sh = t.ints((1000,), 0, 37)
    out = t.xp.segment_sum(d, s, 37)
    t.sync()
    ref = np.zeros((37, 16))
    np.add.at(ref, sh, dh)
    sc = np.zeros((37, 16))
    np.add.at(sc, sh, np.abs(dh))
    t.close("segment_sum", out, ref, 1e-5, 0.0, scale=sc)


@case("segment", "segment_max_mean_sorted")
def _(t):
    """xp.segment_max / segment_mean with sorted ids (empty segments), f32 (500, 8)."""
    np, xp = t.np, t.xp
    d, dh = t.randn((500, 8))
    sh = np.sort(t.g.integers(0, 60, 500))
    s, _ = t.up(sh.astype(np.int64))
    mx = xp.segment_max(d, s, 64, indices_are_sorted=True)
    mn = xp.segment_mean(d, s, 64, indices_are_sorted=True)
    t.sync()
    rmax = np.full((64, 8), -np.inf)
    np.maximum.at(rmax, sh, dh)
    cnt = np.bincount(sh, minlength=64)[:, None]
    rsum = np.zeros((64, 8))
    np.add.at(rsum, sh, dh)
    t.equal("segment_max", mx, rmax)
    t.close("segment_mean", mn, np.where(cnt > 0, rsum / np.maximum(cnt, 1), 0.0), 1e-5, 1e-6)


@case("segment", "embedding_fw_bw")
def _(t):
    """xp.embedding (100 × 32 table, 500 ids) and EmbeddingBackwardPlan (sort-based dweight)."""
    np, bd = t.np, t.bd
    w, wh = t.randn((100, 32))
    ids, ih = t.ints((500,), 0, 100)
    e = t.xp.embedding(ids, w)
    dy, dyh = t.randn((500, 32))
    dw = t.empty((100, 32))
    t.run(bd.EmbeddingBackwardPlan.select(bd.EmbeddingDescriptor(100, 32, 500, "f32")),
          bd.EmbeddingBackwardArgs(dy, ids, dw))
    t.sync()
    t.equal("embedding", e, wh[ih])
    ref = np.zeros((100, 32))
    np.add.at(ref, ih, dyh)
    sc = np.zeros((100, 32))
    np.add.at(sc, ih, np.abs(dyh))
    t.close("dweight", dw, ref, 1e-5, 0.0, scale=sc)


@case("segment", "embedding_bag_index_add")
def _(t):
    """xp.embedding_bag (mean, max) over 40 bags and xp.index_add, f32."""
    np, xp = t.np, t.xp
    w, wh = t.randn((64, 16))
    idx, ih = t.ints((300,), 0, 64)
    offh = np.sort(t.g.choice(np.arange(1, 300), 39, replace=False))
    offh = np.concatenate([[0], offh]).astype(np.int64)
    off, _ = t.up(offh)
    bm = xp.embedding_bag(idx, w, off, mode="mean")
    bx = xp.embedding_bag(idx, w, off, mode="max")
    x, xh = t.randn((10, 16))
    j, jh = t.ints((25,), 0, 10)
    src, sh = t.randn((25, 16))
    ia = xp.index_add(x, 0, j, src, alpha=2)
    t.sync()
    bounds = list(offh) + [300]
    rows = [wh[ih[bounds[b]:bounds[b + 1]]] for b in range(40)]
    t.close("bag mean", bm, np.stack([r.mean(0) for r in rows]), 1e-5, 1e-6)
    t.equal("bag max", bx, np.stack([r.max(0) for r in rows]))
    ra = xh.copy()
    np.add.at(ra, jh, 2 * sh)
    t.close("index_add", ia, ra, 1e-5, 1e-5)


@case("segment", "bag_and_segment_backward")
def _(t):
    """EmbeddingBagBackwardPlan (mean: bag counts + index map, then the sorted reduction) and
    SegmentBackwardPlan for segment_max (argmax recomputed, segment_bw gather), f32."""
    np, bd = t.np, t.bd
    V, D, n, B = 50, 24, 200, 30
    idx, ih = t.ints((n,), 0, V)
    offh = np.concatenate([[0], np.sort(t.g.choice(np.arange(1, n), B - 1, replace=False))])
    off, _ = t.up(offh.astype(np.int64))
    dy, dyh = t.randn((B, D))
    dw = t.empty((V, D))
    t.run(bd.EmbeddingBagBackwardPlan.select(bd.EmbeddingBagDescriptor(V, D, n, B, "mean",
                                                                       "f32")),
          bd.EmbeddingBagBackwardArgs(dy, idx, off, dw))
    data, dh = t.randn((300, 16))
    ids, sh = t.ints((300,), 0, 20)
    gdy, gdyh = t.randn((20, 16))
    dx = t.empty((300, 16))
    t.run(bd.SegmentBackwardPlan.select(bd.SegmentDescriptor((300, 16), 20, "max", "f32")),
          bd.SegmentBackwardArgs(data, ids, None, gdy, dx))
    t.sync()
    bounds = list(offh) + [n]
    ref = np.zeros((V, D))
    for b in range(B):
        rows = ih[bounds[b]:bounds[b + 1]]
        for r in rows:
            ref[r] += dyh[b] / len(rows)
    t.close("bag dweight", dw, ref, 1e-5, 1e-6)
    rx = np.zeros((300, 16))
    for sgm in range(20):
        rows = np.flatnonzero(sh == sgm)
        if rows.size:
            am = rows[np.argmax(dh[rows], axis=0)]
            rx[am, np.arange(16)] = gdyh[sgm]
    t.equal("segment_max dx", dx, rx)


# -------------------------------------------------------------------------------- losses
def _ce_ref(xh, th, ls=0.0):
    np = _np()
    lsm = ref_softmax(xh, log=True)
    nll = -lsm[np.arange(len(th)), th]
    if ls:
        nll = (1 - ls) * nll + ls * (-lsm.mean(1))
    return nll, lsm


def _ce(t, n, c, ls=0.0):
    np, bd = t.np, t.bd
    x, xh = t.randn((n, c), scale=2.0)
    tg, th = t.ints((n,), 0, c)
    loss, lse, tw = t.empty(()), t.empty((n,)), t.empty(())
    desc = dict(reduction="mean", label_smoothing=ls)
    t.run(bd.CrossEntropyPlan.select(bd.CrossEntropyDescriptor(n, c, "f32", **desc)),
          bd.CrossEntropyArgs(x, tg, loss, lse=lse, total_weight=tw))
    dx = t.empty((n, c))
    g, _ = t.up(np.array(1.0, np.float32))
    t.run(bd.CrossEntropyBackwardPlan.select(bd.CrossEntropyBackwardDescriptor(n, c, "f32",
                                                                               **desc)),
          bd.CrossEntropyBackwardArgs(x, tg, lse, g, dx, total_weight=tw))
    t.sync()
    nll, lsm = _ce_ref(xh, th, ls)
    t.close("loss", loss, nll.mean(), 1e-4)
    m = xh.max(1)
    t.close("lse", lse, m + np.log(np.exp(xh - m[:, None]).sum(1)), 1e-5)
    tgt = np.full((n, c), ls / c)
    tgt[np.arange(n), th] += 1 - ls
    t.close("dx", dx, (np.exp(lsm) - tgt) / n, 1e-3, 1e-7)


@case("losses", "cross_entropy_fw_bw")
def _(t):
    """CrossEntropyPlan (mean, label smoothing 0.1) + backward, f32 (64, 1000)."""
    _ce(t, 64, 1000, 0.1)


@case("losses", "cross_entropy_cluster")
def _(t):
    """Cross entropy forward + backward, f32 (2, 50000): sm90a cluster forward (32K < c <= 64K),
    loop backward."""
    _ce(t, 2, 50000)


@case("losses", "cross_entropy_xp_prob_nll")
def _(t):
    """xp.losses.cross_entropy with soft (probability) targets and xp.losses.nll_loss (sum)."""
    np, xp = t.np, t.xp
    x, xh = t.randn((16, 50))
    p = ref_softmax(t.g.standard_normal((16, 50)))
    pt, ph = t.up(p.astype(np.float32))
    l1 = xp.losses.cross_entropy(x, pt)
    tg, th = t.ints((16,), 0, 50)
    l2 = xp.losses.nll_loss(x, tg, reduction="sum")
    t.sync()
    t.close("soft ce", l1, (-(ph * ref_softmax(xh, log=True)).sum(1)).mean(), 1e-4)
    t.close("nll", l2, -xh[np.arange(16), th].sum(), 1e-4, 0.0, scale=np.abs(xh).sum())


@case("losses", "linear_cross_entropy")
def _(t):
    """xp.losses.linear_cross_entropy, f32 x (32, 64), weight (1000, 64), chunk 256 (GEMM +
    lce_chunk online update per chunk)."""
    x, xh = t.randn((32, 64), scale=0.3)
    w, wh = t.randn((1000, 64), scale=0.3)
    tg, th = t.ints((32,), 0, 1000)
    loss = t.xp.losses.linear_cross_entropy(x, w, tg, chunk=256)
    t.sync()
    t.close("loss", loss, _ce_ref(xh @ wh.T, th)[0].mean(), 1e-3)


@case("losses", "pointwise_fw_bw")
def _(t):
    """xp.losses.mse_loss / bce_with_logits (reduced) and PointwiseLossBackwardPlan (mse)."""
    np, xp, bd = t.np, t.xp, t.bd
    a, ah = t.randn((40, 50))
    b, bh = t.randn((40, 50))
    y, yh = t.up((t.g.random((40, 50)) < 0.5).astype(np.float32))
    mse = xp.losses.mse_loss(a, b)
    bce = xp.losses.binary_cross_entropy_with_logits(a, y, reduction="sum")
    ga, gb = t.empty((40, 50)), t.empty((40, 50))
    dl, _ = t.up(np.array(1.0, np.float32))
    t.run(bd.PointwiseLossBackwardPlan.select(bd.PointwiseLossBackwardDescriptor(
        "mse_loss", ((40, 50), (40, 50)), "f32")),
        bd.PointwiseLossBackwardArgs(dl, [a, b], [ga, gb]))
    t.sync()
    t.close("mse", mse, ((ah - bh) ** 2).mean(), 1e-5)
    bref = np.maximum(ah, 0) - ah * yh + np.log1p(np.exp(-np.abs(ah)))
    t.close("bce_with_logits", bce, bref.sum(), 1e-5)
    t.close("d mse / da", ga, 2 * (ah - bh) / ah.size, 1e-5, 1e-9)
    t.close("d mse / db", gb, -2 * (ah - bh) / ah.size, 1e-5, 1e-9)


@case("losses", "row_losses")
def _(t):
    """xp.losses cosine_embedding / multi_margin / multilabel_margin / triplet_margin (a CTA
    per row, shared-memory row reductions) and CosineEmbeddingLossBackwardPlan."""
    np, xp, bd = t.np, t.xp, t.bd
    x1, h1 = t.randn((16, 64))
    x2, h2 = t.randn((16, 64))
    yh = np.where(t.g.random(16) < 0.5, 1, -1)
    y, _ = t.up(yh.astype(np.int64))
    yf, _ = t.up(yh.astype(np.float32))           # the backward plan takes x's dtype
    ce = xp.losses.cosine_embedding_loss(x1, x2, y, margin=0.1)
    tg, th = t.ints((16,), 0, 64)
    mm = xp.losses.multi_margin_loss(x1, tg)
    ml_t = np.full((16, 64), -1, np.int64)
    ml_t[:, :3] = np.stack([t.g.permutation(64)[:3] for _ in range(16)])   # 3 distinct labels
    mlt, _ = t.up(ml_t)
    ml = xp.losses.multilabel_margin_loss(x1, mlt)
    x3, h3 = t.randn((16, 64))
    tr = xp.losses.triplet_margin_loss(x1, x2, x3)
    d1, d2 = t.empty((16, 64)), t.empty((16, 64))
    dl, _ = t.up(np.array(1.0, np.float32))
    t.run(bd.CosineEmbeddingLossBackwardPlan.select(bd.CosineEmbeddingLossBackwardDescriptor(
        16, 64, "f32", margin=0.1)), bd.CosineEmbeddingLossBackwardArgs(dl, x1, x2, yf, d1, d2))
    t.sync()
    cos = (h1 * h2).sum(1) / np.sqrt((h1 * h1).sum(1) * (h2 * h2).sum(1))
    t.close("cosine_embedding", ce, np.where(yh == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean(),
            1e-4)
    xy = h1[np.arange(16), th][:, None]
    mref = np.maximum(0, 1 - xy + h1)
    mref[np.arange(16), th] = 0
    t.close("multi_margin", mm, (mref.sum(1) / 64).mean(), 1e-4)
    mlr = []
    for r in range(16):
        labels = []
        for v in ml_t[r]:
            if v < 0:
                break
            labels.append(v)
        others = [j for j in range(64) if j not in labels]
        mlr.append(sum(max(0.0, 1 - (h1[r, a] - h1[r, o])) for a in labels for o in others) / 64)
    t.close("multilabel_margin", ml, np.mean(mlr), 1e-4)
    dap = np.sqrt(((h1 - h2 + 1e-6) ** 2).sum(1))
    dan = np.sqrt(((h1 - h3 + 1e-6) ** 2).sum(1))
    t.close("triplet_margin", tr, np.maximum(dap - dan + 1.0, 0).mean(), 1e-4)
    t.check("cosine backward finite", np.isfinite(t.host(d1)).all() and
            np.isfinite(t.host(d2)).all())


def _ctc_alpha(lp, tgt, blank):
    """-log p(target | log_probs (T, C)) by the CTC forward recursion (float64)."""
    np = _np()
    ext = [blank]
    for c in tgt:
        ext += [int(c), blank]
    S, T = len(ext), lp.shape[0]
    a = np.full(S, -np.inf)
    a[0] = lp[0, ext[0]]
    if S > 1:
        a[1] = lp[0, ext[1]]
    for k in range(1, T):
        prev = a.copy()
        for s in range(S):
            terms = [prev[s]]
            if s >= 1:
                terms.append(prev[s - 1])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(prev[s - 2])
            m = max(terms)
            a[s] = (m + np.log(sum(np.exp(v - m) for v in terms)) if m > -np.inf else -np.inf) \
                + lp[k, ext[s]]
    tail = [a[S - 1]] + ([a[S - 2]] if S > 1 else [])
    m = max(tail)
    return -(m + np.log(sum(np.exp(v - m) for v in tail)))


@case("losses", "ctc_fw_bw")
def _(t):
    """xp.losses.ctc_loss (padded targets, mean) and CTCLossBackwardPlan, f32 T=30 N=3 C=8."""
    np, xp, bd = t.np, t.xp, t.bd
    T_, N, C, S = 30, 3, 8, 6
    raw = t.g.standard_normal((T_, N, C))
    lph = ref_softmax(raw, log=True).astype(np.float32)
    lp, lph = t.up(lph)
    tgt_h = t.g.integers(1, C, (N, S)).astype(np.int64)
    tg, _ = t.up(tgt_h)
    il, tl = [30, 25, 20], [6, 4, 5]
    loss = xp.losses.ctc_loss(lp, tg, il, tl, reduction="mean")
    grad = t.empty((T_, N, C))
    ilx, _ = t.up(np.array(il, np.int64))
    tlx, _ = t.up(np.array(tl, np.int64))
    dl, _ = t.up(np.array(1.0, np.float32))
    t.run(bd.CTCLossBackwardPlan.select(bd.CTCLossBackwardDescriptor(T_, N, C, "f32", S)),
          bd.CTCLossBackwardArgs(dl, lp, tg, ilx, tlx, grad))
    t.sync()
    per = [_ctc_alpha(lph[:il[i], i], tgt_h[i, :tl[i]], 0) / tl[i] for i in range(N)]
    t.close("loss", loss, np.mean(per), 1e-4)
    gh = t.host(grad)
    t.check("grad finite", np.isfinite(gh).all())


# -------------------------------------------------------------------------------- random
@case("random", "draws")
def _(t):
    """xp.random Generator: random, standard_normal, integers, bernoulli (Philox fills); loose
    moments and ranges."""
    np = t.np
    g = t.xp.random.default_rng(1234)
    u = g.random((20000,))
    z = g.standard_normal((20000,))
    k = g.integers(0, 10, size=(20000,))
    b = g.bernoulli(0.3, size=(20000,))
    t.sync()
    uh, zh, kh, bh = t.host(u), t.host(z), t.host(k), t.host(b)
    t.check("uniform in [0,1)", ((uh >= 0) & (uh < 1)).all() and abs(uh.mean() - 0.5) < 0.02)
    t.check("normal moments", abs(zh.mean()) < 0.05 and abs(zh.std() - 1) < 0.05,
            f"{zh.mean()} {zh.std()}")
    t.check("integers", kh.min() == 0 and kh.max() == 9)
    t.check("bernoulli", abs(bh.astype(np.float64).mean() - 0.3) < 0.02)
    g2 = t.xp.random.default_rng(1234)
    t.equal("reproducible", g2.random((20000,)), uh)


@case("random", "dropout_fw_bw")
def _(t):
    """xp.dropout (p=0.25) and DropoutPlan with mask + DropoutBackwardPlan (regenerated mask)."""
    np, bd = t.np, t.bd
    x, xh = t.randn((64, 100))
    y = t.xp.dropout(x, p=0.25, seed=5)
    y2, mask = t.empty((64, 100)), t.empty((64, 100), "bool")
    t.run(bd.DropoutPlan.select(bd.DropoutDescriptor((64, 100), "f32", p=0.25)),
          bd.DropoutArgs(x, y2, seed=9, offset=0, mask=mask))
    dy, dyh = t.randn((64, 100))
    dx = t.empty((64, 100))
    t.run(bd.DropoutBackwardPlan.select(bd.DropoutBackwardDescriptor((64, 100), "f32", p=0.25)),
          bd.DropoutBackwardArgs(dy, dx, seed=9, offset=0))
    t.sync()
    yh = t.host(y)
    kept = yh != 0
    t.close("kept scaled", yh[kept], xh[kept] / 0.75, 1e-6)
    t.check("keep rate", abs(kept.mean() - 0.75) < 0.05, f"{kept.mean()}")
    mh = t.host(mask).astype(bool)
    t.close("masked y", y2, np.where(mh, xh / 0.75, 0.0), 1e-6)
    t.close("dx", dx, np.where(mh, dyh / 0.75, 0.0), 1e-6)


# --------------------------------------------------------------------------------- shape
@case("shape", "transpose_tiled")
def _(t):
    """Transposed copies: xp.ascontiguousarray(x.T) f32 (300, 257) and a bf16 3-D permute
    (tiled transpose through padded shared memory)."""
    xp = t.xp
    x, xh = t.randn((300, 257))
    y = xp.ascontiguousarray(x.T)
    z, zh = t.randn((4, 96, 130), "bfloat16")
    p = xp.ascontiguousarray(xp.permute_dims(z, (2, 0, 1)))
    t.sync()
    t.equal("x.T", y, xh.T)
    t.equal("permute", p, zh.transpose(2, 0, 1))


@case("shape", "permute_plan_bw")
def _(t):
    """PermutePlan (2048 × 96 → 96 × 2048, int16 words) and PermuteBackwardPlan."""
    bd = t.bd
    x, xh = t.ints((96, 2048), -1000, 1000, "int16")
    out = t.empty((2048, 96), "int16")
    t.run(bd.PermutePlan.select(bd.PermuteDescriptor((96, 2048), (1, 0), "i16")),
          bd.PermuteArgs(x, out))
    dx = t.empty((96, 2048), "int16")
    t.run(bd.PermuteBackwardPlan.select(bd.PermuteDescriptor((96, 2048), (1, 0), "i16")),
          bd.PermuteBackwardArgs(out, dx))
    t.sync()
    t.equal("permute", out, xh.T)
    t.equal("backward", dx, xh)


@case("shape", "strided_copy_concat_flip_roll")
def _(t):
    """Strided copies: a sliced view made dense, xp.concat, xp.flip, xp.roll, xp.tile."""
    np, xp = t.np, t.xp
    x, xh = t.randn((60, 90))
    a = xp.ascontiguousarray(x[::2, 1::3])
    y, yh = t.randn((60, 7))
    c = xp.concat([x, y], axis=1)
    f = xp.flip(x, axis=1)
    r = xp.roll(x, (5, -7), axis=(0, 1))
    tl = xp.tile(y, (2, 3))
    t.sync()
    t.equal("slice copy", a, xh[::2, 1::3])
    t.equal("concat", c, np.concatenate([xh, yh], 1))
    t.equal("flip", f, xh[:, ::-1])
    t.equal("roll", r, np.roll(xh, (5, -7), axis=(0, 1)))
    t.equal("tile", tl, np.tile(yh, (2, 3)))


@case("shape", "repeat_fw_bw")
def _(t):
    """xp.repeat (int and per-element counts) and RepeatBackwardPlan (tile sums)."""
    np, xp, bd = t.np, t.xp, t.bd
    x, xh = t.randn((20, 30))
    r1 = xp.repeat(x, 3, axis=1)
    cnt = t.g.integers(0, 4, 20)
    r2 = xp.repeat(x, xp.asarray(cnt.astype(np.int64)), axis=0)
    dy, dyh = t.randn((40, 90))
    dx = t.empty((20, 30))
    t.run(bd.RepeatBackwardPlan.select(bd.RepeatBackwardDescriptor((20, 30), (2, 3), "f32")),
          bd.RepeatBackwardArgs(dy, dx))
    t.sync()
    t.equal("repeat int", r1, np.repeat(xh, 3, axis=1))
    t.equal("repeat counts", r2, np.repeat(xh, cnt, axis=0))
    t.close("repeat backward", dx, dyh.reshape(2, 20, 3, 30).sum((0, 2)), 1e-5, 1e-6)


@case("shape", "pad_fw_bw")
def _(t):
    """xp.pad constant / reflect / circular, PadBackwardPlan for the last-two-dims case
    (pad_bw2d) and a 3-dim pad (generic pad_bw)."""
    np, xp, bd = t.np, t.xp, t.bd
    x, xh = t.randn((3, 20, 30))
    pc = xp.pad(x, (2, 3, 1, 0), mode="constant", value=1.5)
    pr = xp.pad(x, (4, 4, 2, 2), mode="reflect")
    pw = xp.pad(x, (3, 1), mode="circular")
    t.sync()
    t.equal("constant", pc, np.pad(xh, ((0, 0), (1, 0), (2, 3)), constant_values=1.5))
    t.equal("reflect", pr, np.pad(xh, ((0, 0), (2, 2), (4, 4)), mode="reflect"))
    t.equal("circular", pw, np.pad(xh, ((0, 0), (0, 0), (3, 1)), mode="wrap"))
    for pads, mode in ((((0, 0), (2, 2), (4, 4)), "reflect"),
                       (((1, 1), (2, 0), (0, 3)), "replicate")):
        oshape = tuple(s + a + b for s, (a, b) in zip(xh.shape, pads))
        dy, dyh = t.randn(oshape)
        dx = t.empty(xh.shape)
        t.run(bd.PadBackwardPlan.select(bd.PadDescriptor(xh.shape, pads, mode, dtype="f32")),
              bd.PadBackwardArgs(dy, dx))
        t.sync()
        # reference: the adjoint of numpy's pad (pad an index grid, scatter-add dy back)
        grid = np.arange(xh.size).reshape(xh.shape)
        src = np.pad(grid, pads, mode="reflect" if mode == "reflect" else "edge")
        ref = np.bincount(src.reshape(-1), weights=dyh.reshape(-1),
                          minlength=xh.size).reshape(xh.shape)
        t.close(f"pad backward {mode}", dx, ref, 1e-5, 1e-5)


@case("shape", "fill_triu")
def _(t):
    """xp.full of 9001 float64 (> 64 KiB, an 8-byte pattern no memset takes: an elementwise
    scalar copy), FillPlan into a strided f64 view (the fill kernel), xp.triu / xp.tril."""
    np, xp = t.np, t.xp
    f = xp.full((9001,), 1.2345678901234, dtype=xp.float64)
    base = t.empty((300, 40), "float64")
    fp = t.bd.FillPlan.select(t.bd.FillDescriptor((300, 20), "f64", -2.718281828459045))
    t.run(fp, t.bd.FillArgs(base[:, ::2]))               # strided: the fill kernel
    x, xh = t.randn((5, 40, 50))
    u, lo = xp.triu(x, k=1), xp.tril(x, k=-2)
    t.sync()
    t.equal("full", f, np.full(9001, 1.2345678901234))
    t.equal("FillPlan", base[:, ::2], np.full((300, 20), -2.718281828459045))
    t.equal("triu", u, np.triu(xh, 1))
    t.equal("tril", lo, np.tril(xh, -2))


# --------------------------------------------------------------------------- elementwise
@case("elementwise", "binary_flat_broadcast")
def _(t):
    """xp add (flat dense path), multiply with a broadcast row (s4 path), strided views (v4)."""
    a, ah = t.randn((100, 128))
    b, bh = t.randn((100, 128))
    r, rh = t.randn((128,))
    s1, s2 = a + b, a * r
    s3 = a[:, ::2] - b[::-1, 1::2]
    t.sync()
    t.close("add", s1, ah + bh, 1e-6, 1e-7)
    t.close("mul bcast", s2, ah * rh, 1e-6, 1e-7)
    t.close("strided sub", s3, ah[:, ::2] - bh[::-1, 1::2], 1e-6, 1e-7)


@case("elementwise", "unary_ternary_cast")
def _(t):
    """xp.exp / gelu (unary), xp.where / fma / clip (ternary), casts f32 → bf16 → f32 and
    f32 → int32, comparisons → bool, xp.swiglu (gated)."""
    np, xp = t.np, t.xp
    x, xh = t.randn((3000,))
    y, yh = t.randn((3000,))
    e, gl = xp.exp(x), xp.gelu(x)
    w = xp.where(x > y, x, y)
    f = xp.fma(x, y, x)
    c = xp.clip(x, -0.5, 0.5)
    bf = xp.astype(xp.astype(x, xp.bfloat16), xp.float32)
    i = xp.astype(x * 10, xp.int32)
    sg = xp.swiglu(xp.reshape(x, (30, 100)), axis=-1)
    t.sync()
    t.close("exp", e, np.exp(xh), 1e-5)
    t.close("gelu", gl, ref_gelu(xh), 1e-5, 1e-6)
    t.equal("where", w, np.maximum(xh, yh))
    t.close("fma", f, xh * yh + xh, 1e-6, 1e-7)
    t.equal("clip", c, np.clip(xh, -0.5, 0.5))
    t.equal("cast bf16", bf, bf16_round(xh.astype(np.float32)))
    t.equal("cast int32", i, np.trunc(xh.astype(np.float32) * np.float32(10)).astype(np.int32))
    x2 = xh.reshape(30, 100)
    t.close("swiglu", sg, ref_silu(x2[:, :50]) * x2[:, 50:], 1e-5, 1e-7)


@case("elementwise", "binary_backward_bcast")
def _(t):
    """BinaryBackwardPlan multiply with a broadcast operand (all grads in one kernel, db summed
    over the broadcast dim by ReduceToPlan)."""
    np, bd = t.np, t.bd
    a, ah = t.randn((64, 100))
    b, bh = t.randn((100,))
    dy, dyh = t.randn((64, 100))
    da, db = t.empty((64, 100)), t.empty((100,))
    t.run(bd.BinaryBackwardPlan.select(bd.ElementwiseBackwardDescriptor(
        "multiply", ((64, 100), (100,)), "f32")), bd.ElementwiseBackwardArgs(dy, [a, b], [da, db]))
    t.sync()
    t.close("da", da, dyh * bh, 1e-6, 1e-7)
    t.close("db", db, (dyh * ah).sum(0), 1e-5, 0.0, scale=np.abs(dyh * ah).sum(0))


@case("elementwise", "int_complex_bf16")
def _(t):
    """Integer floor_divide / bitwise_and, complex64 multiply, bf16 silu (16-bit packed path)."""
    np, xp = t.np, t.xp
    i, ih = t.ints((2000,), -1000, 1000, "int32")
    j, jh = t.ints((2000,), 1, 50, "int32")
    fd, ba = xp.floor_divide(i, j), xp.bitwise_and(i, j)
    zh = (t.g.standard_normal(500) + 1j * t.g.standard_normal(500)).astype(np.complex64)
    z = xp.asarray(zh)
    zz = z * z
    h, hh = t.randn((4096,), "bfloat16")
    s = xp.silu(h)
    t.sync()
    t.equal("floor_divide", fd, np.floor_divide(ih, jh))
    t.equal("bitwise_and", ba, ih & jh)
    t.close("complex mul", zz, zh.astype(np.complex128) ** 2, 1e-5, 1e-6)
    t.close("silu bf16", s, ref_silu(hh), 2e-2, 1e-2)


# ---------------------------------------------------------------------------------- gemm
def _gemm(t, m, n, k, *, tile=None, splits=None, dtype="bfloat16", a_t=False, epilogue="identity",
          beta=0.0, expect=None):
    """c = a @ b (+ beta·c + bias, activation) through GemmPlan with a forced tile / split."""
    np, bd = t.np, t.bd
    if a_t:
        a0, a0h = t.randn((k, m), dtype)
        a, ah = a0.T, a0h.T
    else:
        a, ah = t.randn((m, k), dtype)
    b, bh = t.randn((k, n), dtype)
    c, ch = t.randn((m, n), dtype) if beta else (t.empty((m, n), dtype), None)
    bias, biash = t.randn((n,), dtype) if epilogue != "identity" else (None, None)
    tf32 = tile == "tf32"
    if tf32:
        tile = None
    pref = t.pref(tile=tile, splits=splits) if (tile or splits) else None
    short = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}[dtype]
    plan = bd.GemmPlan.select(bd.GemmDescriptor(m, n, k, short, beta=beta, epilogue=epilogue,
                                                allow_tf32=tf32), pref)
    args = bd.GemmArgs(a, b, c, bias)
    tmpl, knobs = plan.kernel_for(args)
    if expect is not None and tmpl.name != expect:
        t._fail(f"plan picked {tmpl.name}, expected {expect}")
    t.notes.append(f"{tmpl.name}{'' if splits is None else f' splits={plan.splits}'}")
    t.run(plan, args)
    t.sync()
    ref = ah @ bh
    scale = gemm_scale(ah, bh)
    if beta:
        ref = ref + beta * ch
        scale = scale + abs(beta) * np.abs(ch)
    if bias is not None:
        ref = ref + biash
        scale = scale + np.abs(biash)
    ref = {"bias_relu": lambda v: np.maximum(v, 0), "bias_gelu": ref_gelu,
           "bias_silu": ref_silu}.get(epilogue, lambda v: v)(ref)
    rtol = {"bfloat16": 1.6e-2, "float16": 2e-3, "float32": 4e-3 if tf32 else 2e-5,
            "float64": 1e-12}[dtype]
    t.close("c", c, ref, rtol, 1e-6, scale=scale)


@case("gemm", "sm90_128x128")
def _(t):
    """GemmPlan bf16 256×256×256 on the sm90a warp-specialised TMA/wgmma kernel, 128×128 tile."""
    _gemm(t, 256, 256, 256, tile="wgmma128x128", splits=1, expect="gemm_sm90")


@case("gemm", "sm90_cluster2")
def _(t):
    """GemmPlan bf16 256×256×256, tile wgmma128x256c2: 2-CTA cluster, TMA multicast of b."""
    _gemm(t, 256, 256, 256, tile="wgmma128x256c2", splits=1, expect="gemm_sm90")


@case("gemm", "sm90_128x256_mmajor_bias_gelu")
def _(t):
    """GemmPlan f16, m-major a (a transposed view), tile wgmma128x256, beta 0.5 + bias_gelu."""
    _gemm(t, 256, 256, 256, tile="wgmma128x256", splits=1, dtype="float16", a_t=True,
          epilogue="bias_gelu", beta=0.5, expect="gemm_sm90")


@case("gemm", "sm90_narrow_128x64")
def _(t):
    """GemmPlan bf16 256×256×256 on the narrow wgmma128x64 tile, bias_relu epilogue."""
    _gemm(t, 256, 256, 256, tile="wgmma128x64", splits=1, epilogue="bias_relu",
          expect="gemm_sm90")


@case("gemm", "sm90_split_k")
def _(t):
    """GemmPlan bf16 128×256×1024 split 4 ways over k on wgmma128x128 (f32 partials in the
    workspace, then gemm_splitk_reduce)."""
    _gemm(t, 128, 256, 1024, tile="wgmma128x128", splits=4, expect="gemm_sm90")


@case("gemm", "mma_128x128_and_decode")
def _(t):
    """GemmPlan bf16 on the mma.sync kernel (cp.async pipeline, ldmatrix): tile 128x128 at
    256×256×256, then the decode tile 16x32 at m=16."""
    _gemm(t, 256, 256, 256, tile="128x128", splits=1, expect="gemm_mma")
    _gemm(t, 16, 256, 256, tile="16x32", splits=1, expect="gemm_mma")


@case("gemm", "mma_64x64_split_k")
def _(t):
    """GemmPlan f16 64×128×2048 on mma.sync 64x64 with split-K 4 (+ gemm_splitk_reduce)."""
    _gemm(t, 64, 128, 2048, tile="64x64", splits=4, dtype="float16", expect="gemm_mma")


@case("gemm", "simt_f32_f64_tf32")
def _(t):
    """GemmPlan strict f32 and f64 (gemm_simt, shared-memory tiles) and tf32 (gemm_tf32)."""
    _gemm(t, 256, 256, 256, dtype="float32", expect="gemm_simt")
    _gemm(t, 100, 130, 70, dtype="float64", expect="gemm_simt")
    _gemm(t, 256, 256, 256, dtype="float32", tile="tf32", expect="gemm_tf32")


@case("gemm", "batched")
def _(t):
    """BatchedGemmPlan bf16: 3 × (64×96×128) in one mma.sync launch (batch grid index) and
    2 × (256×256×256) as a launch loop of the sm90a kernel."""
    np, bd = t.np, t.bd
    for (bt, m, n, k) in ((3, 64, 96, 128), (2, 256, 256, 256)):
        a, ah = t.randn((bt, m, k), "bfloat16")
        b, bh = t.randn((bt, k, n), "bfloat16")
        c = t.empty((bt, m, n), "bfloat16")
        plan = bd.BatchedGemmPlan.select(bd.BatchedGemmDescriptor(bt, m, n, k, "bf16"))
        t.run(plan, bd.BatchedGemmArgs(a, b, c))
        t.notes.append(f"{plan.sku().template}")
        t.sync()
        t.close(f"c[{bt}x{m}x{n}x{k}]", c, ah @ bh, 1.6e-2, 1e-6,
                scale=np.abs(ah) @ np.abs(bh))


def _fp8(t, m, n, k, a_dt, b_dt, out="bf16", tile=None, splits=None):
    np, bd = t.np, t.bd
    a, ah = t.randn((m, k), a_dt)
    w, wh = t.randn((n, k), b_dt)                  # b = w.T: k-major (column-major b)
    sa_h = t.g.uniform(0.5, 1.5, m).astype(np.float32)
    sa, _ = t.up(sa_h)
    sb, _ = t.up(np.array([0.75], np.float32))
    c = t.empty((m, n), {"bf16": "bfloat16", "f32": "float32"}[out])
    pref = t.pref(tile=tile, splits=splits) if (tile or splits) else None
    plan = bd.Fp8GemmPlan.select(bd.Fp8GemmDescriptor(m, n, k, a_dt, b_dt, out_dtype=out), pref)
    args = bd.Fp8GemmArgs(a, w.T, c, sa, sb)
    t.run(plan, args)
    t.notes.append(plan.sku().template)
    t.sync()
    ref = sa_h[:, None].astype(np.float64) * 0.75 * (ah @ wh.T)
    scale = np.abs(sa_h[:, None]) * 0.75 * (np.abs(ah) @ np.abs(wh.T))
    t.close("c", c, ref, 1.6e-2 if out == "bf16" else 2e-3, 1e-5, scale=scale)


@case("gemm", "fp8_sm90")
def _(t):
    """Fp8GemmPlan e4m3·e4m3 → bf16, 256×256×256, per-row / per-tensor scales (sm90a wgmma fp8
    SKU of gemm_sm90)."""
    _fp8(t, 256, 256, 256, "float8_e4m3", "float8_e4m3")


@case("gemm", "fp8_mma_e5m2_and_split")
def _(t):
    """Fp8GemmPlan e5m2·e5m2 → f32 (gemm_fp8, mma.sync m16n8k32) and e4m3·e5m2 128×256×1024
    split over k (sm90a split-K)."""
    _fp8(t, 256, 256, 256, "float8_e5m2", "float8_e5m2", out="f32")
    _fp8(t, 128, 256, 1024, "float8_e4m3", "float8_e5m2", splits=4)


@case("gemm", "int8")
def _(t):
    """IntGemmPlan s8·s8 → int32 (exact) and u8·s8 dequantised to f32, 256×256×256 (gemm_int8)."""
    np, bd = t.np, t.bd
    m = n = k = 256
    a, ah = t.ints((m, k), -128, 128, "int8")
    w, wh = t.ints((n, k), -128, 128, "int8")
    c = t.empty((m, n), "int32")
    plan = bd.IntGemmPlan.select(bd.IntGemmDescriptor(m, n, k))
    t.run(plan, bd.IntGemmArgs(a, w.T, c))
    u, uh = t.ints((m, k), 0, 256, "uint8")
    cf = t.empty((m, n), "float32")
    sa_h = t.g.uniform(0.5, 1.5, m).astype(np.float32)
    sa, _ = t.up(sa_h)
    sb, _ = t.up(np.array([0.01], np.float32))
    plan2 = bd.IntGemmPlan.select(bd.IntGemmDescriptor(m, n, k, "u8", "i8", dequant=True))
    t.run(plan2, bd.IntGemmArgs(u, w.T, cf, sa, sb))
    t.notes.append(plan.sku().template)
    t.sync()
    t.equal("s8 gemm", c, ah.astype(np.int64) @ wh.T.astype(np.int64))
    ref = (uh.astype(np.int64) @ wh.T.astype(np.int64)).astype(np.float64)
    t.close("u8 dequant", cf, sa_h[:, None] * 0.01 * ref, 1e-5, 1e-3)


@case("gemm", "xp_matmul_linear")
def _(t):
    """xp.matmul (bf16, batched broadcast) and xp.linear with a fused silu epilogue (f16)."""
    np, xp = t.np, t.xp
    a, ah = t.randn((2, 64, 256), "bfloat16")
    b, bh = t.randn((256, 128), "bfloat16")
    c = xp.matmul(a, b)
    x, xh = t.randn((32, 256), "float16")
    w, wh = t.randn((64, 256), "float16")
    bias, bsh = t.randn((64,), "float16")
    lin = xp.linear(x, w, bias, activation="silu")
    t.sync()
    t.close("matmul", c, ah @ bh, 1.6e-2, 1e-6, scale=np.abs(ah) @ np.abs(bh))
    t.close("linear", lin, ref_silu(xh @ wh.T + bsh), 4e-3, 1e-3,
            scale=np.abs(xh) @ np.abs(wh.T) + np.abs(bsh))


# ----------------------------------------------------------------------------- attention
def _attn_ref(q, k, v, causal=False, off=None):
    """(out, lse) float64 of q (B, Sq, H, D), k / v (B, Sk, Hk, D): bottom-right causal."""
    np = _np()
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    ke, ve = np.repeat(k, h // hk, 2), np.repeat(v, h // hk, 2)
    s = np.einsum("bqhd,bkhd->bhqk", q, ke) / np.sqrt(d)
    if causal:
        o = sk - sq if off is None else off
        keep = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + o
        s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    z = e.sum(-1, keepdims=True)
    p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
    return np.einsum("bhqk,bkhd->bqhd", p, ve), (np.log(z[..., 0]) + m[..., 0])


@case("attention", "flash_forward_both_kernels")
def _(t):
    """FlashAttentionPlan forward, odd lengths, GQA 4, causal: the sm90a wgmma kernel (when the
    device is sm90a) and the mma.sync kernel."""
    bd = t.bd
    from baracuda_dsl.ops.attention import (FlashAttentionArgs, FlashAttentionDescriptor,
                                            FlashAttentionPlan, FlashTuning)
    q, qh = t.randn((2, 77, 8, 64), "bfloat16")
    k, kh = t.randn((2, 131, 2, 64), "bfloat16")
    v, vh = t.randn((2, 131, 2, 64), "bfloat16")
    ro, rl = _attn_ref(qh, kh, vh, causal=True)
    desc = FlashAttentionDescriptor(2, 77, 131, 8, 2, 64, "bf16", causal=True)
    kernels = ["mma"] + (["wgmma"] if bd.runtime.device_arch().value == "sm90a" else [])
    for kern in kernels:
        plan = FlashAttentionPlan.select(desc, bd.PlanPreference(tuning=(FlashTuning(kern),)))
        out = t.empty(q.shape, "bfloat16")
        lse = t.empty((2, 8, 77), "float32")
        t.run(plan, FlashAttentionArgs(q, k, v, out, lse))
        t.sync()
        t.close(f"out ({kern})", out, ro, 2e-2, 1e-3)
        t.close(f"lse ({kern})", lse, rl, 1e-4, 1e-3)


@case("attention", "flash_backward_both_paths")
def _(t):
    """FlashAttentionBackwardPlan: the fast path (sm90a wgmma + atomic dQ) and the
    deterministic kernels, causal, GQA 2, odd lengths; checked against each other."""
    from baracuda_dsl.ops.attention import (FlashAttentionArgs, FlashAttentionBackwardArgs,
                                            FlashAttentionBackwardDescriptor,
                                            FlashAttentionBackwardPlan, FlashAttentionDescriptor,
                                            FlashAttentionPlan)
    q, _ = t.randn((1, 70, 4, 128), "float16")
    k, _ = t.randn((1, 150, 2, 128), "float16")
    v, _ = t.randn((1, 150, 2, 128), "float16")
    do, _ = t.randn((1, 70, 4, 128), "float16")
    fw = FlashAttentionPlan.select(FlashAttentionDescriptor(1, 70, 150, 4, 2, 128, "f16",
                                                            causal=True))
    out = t.empty(q.shape, "float16")
    lse = t.empty((1, 4, 70), "float32")
    t.run(fw, FlashAttentionArgs(q, k, v, out, lse))
    grads = {}
    for det in (False, True):
        plan = FlashAttentionBackwardPlan.select(FlashAttentionBackwardDescriptor(
            1, 70, 150, 4, 2, 128, "f16", causal=True, deterministic=det))
        g = [t.empty(x.shape, "float16") for x in (q, k, v)]
        t.run(plan, FlashAttentionBackwardArgs(q, k, v, out, do, lse, *g))
        grads[det] = g
    t.sync()
    for a, b, n in zip(grads[False], grads[True], "qkv"):
        ref = t.host(b)
        t.close(f"d{n} fast vs deterministic", a, ref, 2e-2, 2e-2)


@case("attention", "decode_paged_and_sdpa_mask")
def _(t):
    """FlashDecodePlan over a paged cache (3 splits forced) and SdpaPlan with a boolean mask
    (f32), each against a float64 reference."""
    np = t.np
    from baracuda_dsl.ops.attention import (DecodeTuning, FlashDecodeArgs,
                                            FlashDecodeDescriptor, FlashDecodePlan, SdpaArgs,
                                            SdpaDescriptor, SdpaPlan)
    b, hq, hk, d, page, pages = 2, 8, 2, 64, 16, 6
    q, qh = t.randn((b, 1, hq, d), "bfloat16")
    kc, kch = t.randn((pages * 2, page, hk, d), "bfloat16")
    vc, vch = t.randn((pages * 2, page, hk, d), "bfloat16")
    table_h = t.g.permutation(pages * 2).astype(np.int32).reshape(b, pages)
    lens_h = np.array([70, 33], np.int32)
    table, _ = t.up(table_h)
    lens, _ = t.up(lens_h)
    plan = FlashDecodePlan.select(
        FlashDecodeDescriptor(b, 1, hq, hk, d, 96, "bf16", paged=True, num_pages=pages * 2,
                              page_size=page, pages_per_seq=pages),
        t.bd.PlanPreference(tuning=(DecodeTuning(num_splits=3),)))
    out = t.empty(q.shape, "bfloat16")
    t.run(plan, FlashDecodeArgs(q, kc, vc, lens, out, None, table))
    t.sync()
    for i in range(b):
        rows = np.concatenate([np.arange(p * page, (p + 1) * page) for p in table_h[i]])
        kk = kch.reshape(-1, hk, d)[rows][None, :lens_h[i]]
        vv = vch.reshape(-1, hk, d)[rows][None, :lens_h[i]]
        ro, _ = _attn_ref(qh[i:i + 1], kk, vv)
        t.close(f"decode seq {i}", out[i:i + 1], ro, 2e-2, 1e-3)
    q2, q2h = t.randn((1, 9, 2, 7), "float32")
    k2, k2h = t.randn((1, 13, 2, 7), "float32")
    v2, v2h = t.randn((1, 13, 2, 5), "float32")
    keep = t.g.uniform(size=(1, 1, 9, 13)) > 0.3
    mask, _ = t.up(keep)
    sp = SdpaPlan.select(SdpaDescriptor(1, 9, 13, 2, 2, 7, 5, "f32", mask_dtype="bool",
                                        mask_shape=(1, 1, 9, 13)))
    o2 = t.empty((1, 9, 2, 5), "float32")
    t.run(sp, SdpaArgs(q2, k2, v2, o2, None, mask))
    t.sync()
    s = np.einsum("bqhd,bkhd->bhqk", q2h, k2h) / np.sqrt(7)
    s = np.where(keep, s, -np.inf)
    m = np.where(np.isfinite(s.max(-1, keepdims=True)), s.max(-1, keepdims=True), 0)
    e = np.where(keep, np.exp(s - m), 0)
    z = e.sum(-1, keepdims=True)
    p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
    t.close("sdpa bool mask", o2, np.einsum("bhqk,bkhd->bqhd", p, v2h), 1e-5, 1e-6)


@case("attention", "rope_alibi_kv_append")
def _(t):
    """xp.rope (half layout, partial rotary dim), AlibiPlan (bias) and KvCacheAppendPlan
    (paged), each against numpy."""
    np, xp = t.np, t.xp
    from baracuda_dsl.ops.attention import (AlibiArgs, AlibiDescriptor, AlibiPlan,
                                            KvCacheAppendArgs, KvCacheAppendDescriptor,
                                            KvCacheAppendPlan)
    x, xh = t.randn((2, 11, 3, 32), "float32")
    cos, sin = xp.rope_cos_sin(16, 16)
    y = xp.rope(x, cos, sin, rotary_dim=16)
    c, s = t.host(cos)[:11, None, :], t.host(sin)[:11, None, :]
    x1, x2 = xh[..., :8], xh[..., 8:16]
    want = xh.copy()
    want[..., :8] = x1 * c - x2 * s
    want[..., 8:16] = x2 * c + x1 * s
    sl, slh = t.up(np.array([0.5, 0.25, 0.125], np.float32))
    bias = t.empty((1, 3, 5, 9), "float32")
    t.run(AlibiPlan.select(AlibiDescriptor((1, 3, 5, 9))), AlibiArgs(sl, bias))
    dist = np.abs(np.arange(5)[:, None] + 4 - np.arange(9)[None, :])
    kn, knh = t.randn((2, 3, 2, 16), "float16")
    vn, vnh = t.randn((2, 3, 2, 16), "float16")
    kc = xp.zeros((4, 16, 2, 16), dtype=xp.float16)
    vc = xp.zeros((4, 16, 2, 16), dtype=xp.float16)
    table, _ = t.up(np.array([[2, 0], [3, 1]], np.int32))
    lens, _ = t.up(np.array([14, 0], np.int32))
    t.run(KvCacheAppendPlan.select(KvCacheAppendDescriptor(
        2, 3, 2, 16, "f16", num_pages=4, page_size=16, max_pages_per_seq=2)),
        KvCacheAppendArgs(kn, vn, kc, vc, lens, table))
    t.sync()
    t.close("rope", y, want, 1e-5, 1e-6)
    t.close("alibi", bias, -slh[None, :, None, None] * dist[None, None], 1e-6)
    kch = t.host(kc)
    t.close("kv append (seq 0, page 2 rows 14, 15)", kch[2, 14:16], knh[0, :2], 0.0)
    t.close("kv append (seq 0, page 0 row 0)", kch[0, 0], knh[0, 2], 0.0)
    t.close("kv append (seq 1, page 3 rows 0-2)", kch[3, :3], knh[1], 0.0)


# ---------------------------------------------------------------- pool (initcheck targets)
@case("pool", "empty_then_fill_and_copy")
def _(t):
    """xp.empty outputs fully written by a scalar fill and by a strided copy, then read by a
    reduction (initcheck: no uninitialised read)."""
    xp = t.xp
    a = xp.empty((1003,), dtype=xp.float32)
    a[...] = 3.0
    x, xh = t.randn((37, 53))
    b = xp.empty((53, 37), dtype=xp.float32)
    b[...] = x.T
    s1, s2 = xp.sum(a), xp.sum(b, axis=0)
    t.sync()
    t.close("fill", s1, 3.0 * 1003, 1e-6)
    t.close("copy", s2, xh.sum(1), 1e-5, 1e-5)


@case("pool", "creation_memsets")
def _(t):
    """xp.zeros / ones / full (memset and fill-kernel patterns) / arange / eye / linspace,
    each read back by a kernel (xp.sum)."""
    xp = t.xp
    outs = [(xp.zeros((777,), dtype=xp.int64), 0), (xp.ones((555,), dtype=xp.bfloat16), 555),
            (xp.full((333,), 2.5, dtype=xp.float16), 832.5),
            (xp.full((123,), -1.25, dtype=xp.float64), -153.75),
            (xp.arange(1000, dtype=xp.int32), 499500), (xp.eye(31, 29), 29),
            (xp.linspace(0, 1, 101), 50.5)]
    sums = [xp.sum(xp.astype(o, xp.float64)) for o, _ in outs]
    t.sync()
    for (o, want), s in zip(outs, sums):
        t.close(f"{o.dtype.name}{o.shape}", s, want, 1e-6, 1e-9)


@case("pool", "workspaces_and_reuse")
def _(t):
    """Pool workspaces that the plans must write before reading (two-pass sum, row-norm
    backward partials, split-K), and freed-then-reallocated blocks of the same size."""
    np, xp = t.np, t.xp
    for i in range(3):
        x, xh = t.randn((150000,))
        s = xp.sum(x)
        y = xp.cumulative_sum(x)
        t.sync()
        t.close(f"sum[{i}]", s, xh.sum(), 1e-5, 0.0, scale=np.abs(xh).sum())
        t.close(f"cumsum[{i}]", y[-1:], xh.sum(keepdims=True), 1e-5, 0.0,
                scale=np.abs(xh).sum(keepdims=True))
        del x, s, y
    _rms_bw(t, 3, 3000)


@case("pool", "outputs_fully_written")
def _(t):
    """Ops whose dense outputs must be written everywhere: one_hot, pad (borders), concat,
    cumulative_sum include_initial, scatter on a copy, segment_sum with empty segments."""
    np, xp = t.np, t.xp
    i, ih = t.ints((50,), 0, 7)
    x, xh = t.randn((10, 12))
    idx, idh = t.ints((10, 3), 0, 12)
    outs = [xp.astype(xp.one_hot(i, 9), xp.float32), xp.pad(x, (3, 2, 1, 4), value=0.5),
            xp.concat([x, x * 2], axis=0), xp.cumulative_sum(x, axis=1, include_initial=True),
            xp.scatter(x, 1, idx, 1.0), xp.segment_sum(x, xp.asarray(np.array(
                [0, 0, 2, 2, 2, 5, 5, 9, 9, 9], np.int64)), 12, indices_are_sorted=True)]
    sums = [xp.sum(o) for o in outs]
    t.sync()
    rs = xh.copy()
    np.put_along_axis(rs, idh, 1.0, 1)
    seg = np.zeros((12, 12))
    np.add.at(seg, [0, 0, 2, 2, 2, 5, 5, 9, 9, 9], xh)
    refs = [50.0, np.pad(xh, ((1, 4), (3, 2)), constant_values=0.5).sum(), 3 * xh.sum(),
            np.cumsum(xh, 1).sum(), rs.sum(), seg.sum()]
    for k, (s, r) in enumerate(zip(sums, refs)):
        t.close(f"out[{k}]", s, r, 1e-4, 1e-4)


# ================================================================================ driver
class Recorder:
    """Kernel launches of the current case: (template, knobs, grid, cluster, smem)."""

    def __init__(self):
        self.launches = []
        self.all = set()

    def add(self, template, knobs, grid, cluster, smem):
        self.launches.append((template, knobs, tuple(grid), int(cluster), int(smem)))
        self.all.add(template)

    def take(self):
        out, self.launches = self.launches, []
        return out


REC = Recorder()


def _install_recorder():
    """Wrap LoadedKernel.launch (every kernel launch of the package goes through it) to record
    which template each case launched."""
    from baracuda_dsl.runtime import module as M

    if getattr(M.LoadedKernel.launch, "_sanitizer_rec", False):
        return
    orig = M.LoadedKernel.launch

    def launch(self, grid, args, stream=0):
        meta = self.artifact.meta
        REC.add(meta.get("template", "?"), meta.get("knobs", ""), grid, self.cluster, self.smem)
        return orig(self, grid, args, stream)

    launch._sanitizer_rec = True
    M.LoadedKernel.launch = launch


POOL = {"allocations": 0, "min_align": None}


def _set_pool(mode: str) -> str:
    """--pool exact: fresh exact-size pool allocations (see the module docstring); both modes
    count the namespace's allocations and the smallest base alignment seen."""
    import array_api._device as D

    if mode == "exact":
        D.CACHE_LIMIT = 0
        D._size_class = lambda nbytes: max(int(nbytes), 1)
    orig = D.allocate

    def allocate(nbytes, device):
        ptr, owner = orig(nbytes, device)
        POOL["allocations"] += 1
        al = ptr & -ptr if ptr else 1 << 30
        POOL["min_align"] = al if POOL["min_align"] is None else min(POOL["min_align"], al)
        return ptr, owner

    D.allocate = allocate
    return mode


def _summarise_kernels(launches) -> str:
    seen = {}
    for tmpl, knobs, grid, cl, smem in launches:
        key = tmpl + (f"[c{cl}]" if cl > 1 else "")
        seen[key] = seen.get(key, 0) + 1
    return ",".join(f"{k}x{n}" if n > 1 else k for k, n in seen.items()) or "-"


def coverage(used) -> List[str]:
    """Lines: every sm90a template with shared memory or clusters and whether it ran."""
    from baracuda_dsl.ops import all_templates

    lines = []
    missing = []
    for tm in all_templates():
        smem = cl = 0
        for kn in tm.skus("sm90a"):
            g = tm.geometry(tm.thaw(kn))
            smem, cl = max(smem, g.smem_bytes), max(cl, g.cluster)
        if smem or cl > 1:
            ran = tm.name in used
            if not ran:
                missing.append(tm.name)
            lines.append(f"  {'ran ' if ran else 'NOT '} {tm.family:14s} {tm.name:22s} "
                         f"smem<={smem} cluster<={cl}")
    lines.append(f"COVERAGE shared-memory/cluster templates not launched: "
                 f"{', '.join(missing) if missing else 'none'}")
    rest = [tm.name for tm in all_templates() if tm.name not in used and tm.name not in missing]
    lines.append(f"COVERAGE other templates not launched: {', '.join(rest) if rest else 'none'}")
    return lines


def select(families=None, cases=None) -> List[Case]:
    out = list(CASES)
    if families:
        unknown = set(families) - set(FAMILIES)
        if unknown:
            raise SystemExit(f"launch_all: unknown families {sorted(unknown)}; "
                             f"known: {', '.join(FAMILIES)}")
        out = [c for c in out if c.family in families]
    if cases:
        ids = {c.id for c in CASES}
        unknown = [c for c in cases if c not in ids]
        if unknown:
            raise SystemExit(f"launch_all: unknown cases {unknown} (see --list)")
        out = [c for c in out if c.id in cases]
    return out


def run_cases(cases, dry: bool, verbose: bool = False) -> int:
    import numpy as np

    import array_api as xp
    import baracuda_dsl as bd

    failed = 0
    t_all = time.perf_counter()
    for c in cases:
        REC.take()
        t0 = time.perf_counter()
        t = T(xp, bd, np, zlib.crc32(c.id.encode()), dry)
        err = None
        try:
            c.fn(t)
            t.sync()
        except Exception as e:  # noqa: BLE001 - one line per case, keep going
            err = e
        dt = time.perf_counter() - t0
        launches = REC.take()
        kern = _summarise_kernels(launches)
        if err is not None:
            tb = traceback.extract_tb(err.__traceback__)
            where = f" [{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}]" if tb else ""
            status, detail = "ERROR", (f"{type(err).__name__}: {err}".replace("\n", " | ")[:600]
                                       + where)
        elif t.failures:
            status, detail = "MISMATCH", "; ".join(t.failures)[:600]
        else:
            status, detail = ("dry" if dry else "ok"), " ".join(t.notes)
        if status in ("ERROR", "MISMATCH"):
            failed += 1
        print(f"LAUNCH {c.id} {status} {dt:.2f}s kernels={kern} {detail}".rstrip(), flush=True)
        if verbose or (err is not None and dry):
            for tmpl, knobs, grid, cl, smem in launches:
                print(f"    {tmpl} {knobs} grid={grid} cluster={cl} smem={smem}", flush=True)
        if err is not None and verbose:
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stdout)
            sys.stdout.flush()
    print(f"SUMMARY launch_all: {len(cases)} cases, {failed} failed, "
          f"{time.perf_counter() - t_all:.1f}s", flush=True)
    return failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.sanitizer.launch_all",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="", help="comma-separated families (default: all): "
                    + ",".join(FAMILIES))
    ap.add_argument("--case", default="", help="comma-separated case ids family/name")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--pool", choices=("exact", "cached"), default="exact",
                    help="namespace allocations: fresh exact-size (default) or the normal cache")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: host memory, stand-in kernels, checks skipped")
    ap.add_argument("--coverage", action="store_true",
                    help="print the shared-memory / cluster template coverage table (also "
                         "printed after a full run)")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="every kernel launch (template, knobs, grid) and tracebacks")
    a = ap.parse_args(argv)
    fams = [f for f in a.family.split(",") if f]
    ids = [c for c in a.case.split(",") if c]
    cases = select(fams, ids)
    if a.list:
        for c in cases:
            print(f"{c.id:48s} {c.doc}")
        print(f"{len(cases)} cases in {len({c.family for c in cases})} families")
        return 0
    if a.dry_run:
        from tests.sanitizer import _dry

        _dry.install(REC)
    else:
        import baracuda_dsl as bd

        if not bd.runtime.has_gpu():
            print("launch_all: no CUDA GPU visible (use --list or --dry-run here)", flush=True)
            return 2
        _install_recorder()
        print(f"launch_all: {bd.runtime.device_name()} arch={bd.runtime.device_arch().value} "
              f"pool={_set_pool(a.pool)}", flush=True)
    failed = run_cases(cases, a.dry_run, a.verbose)
    if not a.dry_run:
        print(f"POOL {POOL['allocations']} namespace allocations, smallest base alignment "
              f"{POOL['min_align']} bytes", flush=True)
    if a.coverage or not (fams or ids):
        for line in coverage(REC.all):
            print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
