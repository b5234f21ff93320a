"""SdpaPlan / SdpaBackwardPlan without a GPU: descriptor validation (one test per error),
typed operand errors before any launch, the SKU space, workspace sizes, the exact launch
arguments (``launches`` fixture), an end-to-end numpy emulation of the three kernels driven by
the recorded launch arguments over a fake device memory (pointers, strides, flags, the mask's
broadcast strides, the delta workspace layout and every output element written) against the
float64 references of tests/_attention_ref.py, and a cross-compile sample per arch."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.dtypes import bfloat16, bool_, float16, float32, float64
from baracuda_dsl.errors import (DeviceMismatchError, InvalidProblemError,
                                 MisalignedOperandError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.ops.attention.sdpa import (SdpaArgs, SdpaBackwardArgs, SdpaBackwardDescriptor,
                                             SdpaBackwardPlan, SdpaDescriptor, SdpaPlan,
                                             mask_strides)
from baracuda_dsl.ops.attention.specs import sdpa as spec
from baracuda_dsl.tensor import TensorView, contiguous_strides
from baracuda_dsl.vocabulary import Workspace
from tests import _attention_ref as ref

PREF = PlanPreference(arch=ArchSku.SM90A)
NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
      "float64": np.float64, "bool": np.bool_}
SHORT = {"f16": float16, "bf16": bfloat16, "f32": float32, "f64": float64}


def desc(cls=SdpaDescriptor, **kw):
    base = dict(batch=2, seqlen_q=5, seqlen_k=7, heads_q=4, heads_k=2, head_dim=3)
    base.update(kw)
    return cls(**base)


# ============================================================================ fake memory
class Mem:
    """A fake device address space: regions of bytes at fake addresses (filled with 0xFF, the
    NaN of every float dtype), views over them, and element gathers / scatters that assert
    every access stays inside its region and is aligned to its element size."""

    def __init__(self):
        self.regions = {}
        self._next = 1 << 36

    def alloc(self, nbytes: int) -> int:
        base = self._next
        size = max(8, -(-int(nbytes) // 8) * 8)
        self.regions[base] = np.full(size, 0xFF, np.uint8)
        self._next += -(-size // 4096) * 4096 + 4096
        return base

    def _region(self, ptr: int):
        for base, buf in self.regions.items():
            if base <= ptr < base + len(buf):
                return base, buf
        raise AssertionError(f"pointer {ptr:#x} is in no region")

    def _index(self, ptr, npdt, offsets):
        base, buf = self._region(ptr)
        isz = np.dtype(npdt).itemsize
        byte = (ptr - base) + np.asarray(offsets, np.int64) * isz
        assert (byte % isz == 0).all(), "misaligned access"
        assert (byte >= 0).all() and (byte + isz <= len(buf)).all(), "access out of its region"
        return buf.view(npdt), byte // isz

    def gather(self, ptr, npdt, offsets) -> np.ndarray:
        if not np.size(offsets):
            return np.zeros(np.shape(offsets), npdt)
        arr, idx = self._index(ptr, npdt, offsets)
        return arr[idx]

    def scatter(self, ptr, npdt, offsets, values) -> None:
        if not np.size(offsets):
            return
        arr, idx = self._index(ptr, npdt, offsets)
        idx, values = np.broadcast_arrays(idx, np.asarray(values, np.float64))
        arr[idx.ravel()] = values.ravel().astype(npdt)

    def tensor(self, values, dtype, strides=None, pad: int = 0) -> TensorView:
        """A view of ``values`` (rounded to ``dtype``) in a new region; ``strides`` (elements,
        non-negative) default to contiguous; ``pad`` leading elements (pointer offset)."""
        values = np.asarray(values)
        shape = values.shape
        st = contiguous_strides(shape) if strides is None else tuple(strides)
        npdt = NP[dtype.name]
        span = sum((n - 1) * s for n, s in zip(shape, st)) + 1 if values.size else 0
        base = self.alloc((span + pad) * dtype.itemsize)
        v = TensorView(base + pad * dtype.itemsize, shape, st, dtype, 0)
        if values.size:
            self.scatter(v.ptr, npdt, _offsets(shape, st), values)
        return v

    def empty(self, shape, dtype) -> TensorView:
        """A poisoned (NaN) contiguous output view."""
        n = int(np.prod(shape))
        return TensorView(self.alloc(n * dtype.itemsize), shape, contiguous_strides(shape),
                          dtype, 0)

    def read(self, v: TensorView) -> np.ndarray:
        if not v.numel:
            return np.zeros(v.shape)
        return self.gather(v.ptr, NP[v.dtype.name], _offsets(v.shape, v.strides)).astype(
            np.float64)


def _offsets(shape, strides):
    off = np.zeros(shape, np.int64)
    for ax, (n, s) in enumerate(zip(shape, strides)):
        idx = np.arange(n, dtype=np.int64).reshape([-1 if a == ax else 1
                                                    for a in range(len(shape))])
        off = off + idx * s
    return off


# ====================================================================== kernel emulation
def _ct(knobs):
    return np.float64 if knobs["dtype"] == "f64" else np.float32


def _ax(n, ax, nd=5):
    """arange(n) shaped to broadcast along axis ``ax`` of an ``nd``-d grid."""
    return np.arange(n, dtype=np.int64).reshape([-1 if a == ax else 1 for a in range(nd)])


def _scores(mem, T, b, h, i, j, hk, pq, qs, pk, ks, D, pm, ms, scale, cap, flags):
    """(s, dcap) over (b, h, i, j) as sdpa_common.score computes them (no causal rule): index
    arrays broadcast over 5-d (b, h, i, j, d)."""
    d = _ax(D, 4)
    q = mem.gather(pq, T, b * qs[0] + i * qs[1] + h * qs[2] + d * qs[3]).astype(np.float64)
    k = mem.gather(pk, T, b * ks[0] + j * ks[1] + hk * ks[2] + d * ks[3]).astype(np.float64)
    raw = (q * k).sum(-1) * scale
    s, dcap = raw, np.ones_like(raw)
    if flags & spec.SOFTCAP:
        t = np.tanh(raw / cap)
        s, dcap = cap * t, 1.0 - t * t
    moff = (b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3])[..., 0]
    keep = np.ones(s.shape, bool)
    if flags & spec.MASK_BOOL:
        keep &= mem.gather(pm, np.uint8, moff) != 0
    if flags & spec.MASK_ADD:
        s = s + mem.gather(pm, T, moff).astype(np.float64)
    if flags & spec.MASK_F32:
        s = s + mem.gather(pm, np.float32, moff).astype(np.float64)
    return np.where(keep, s, -np.inf), dcap


def _off(sq, sk, flags):
    return sk - sq if flags & spec.BOTTOM_RIGHT else 0


def emulate(mem: Mem, launch) -> None:
    """Run one recorded launch on ``mem`` the way the kernel does (float64 math)."""
    name, knobs, grid, a, _ = launch
    T, CT = NP[SHORT[knobs["dtype"]].name], _ct(knobs)
    if name == "sdpa_fwd":
        pq, pk, pv, pm, po, pl = a[:6]
        B, H, Sq, Sk, ratio, D, Dv = a[6:13]
        st = a[13:36]
        scale, cap, flags = a[36:39]
        qs, ks, vs, ms, os_, ls = st[0:4], st[4:8], st[8:12], st[12:16], st[16:20], st[20:23]
        assert grid == (Sq, min(H, 65535), min(B, 65535))
        b, h, i, j = _ax(B, 0), _ax(H, 1), _ax(Sq, 2), _ax(Sk, 3)
        hk = h // ratio
        s, _ = _scores(mem, T, b, h, i, j, hk, pq, qs, pk, ks, D, pm, ms, scale, cap, flags)
        if flags & spec.CAUSAL:
            jend = np.clip(i[..., 0] + _off(Sq, Sk, flags) + 1, 0, Sk)
            s = np.where(j[..., 0] < jend, s, -np.inf)
        m = s.max(-1, keepdims=True, initial=-np.inf)
        mm = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(s - mm)
        l = e.sum(-1, keepdims=True)
        p = np.divide(e, l, out=np.zeros_like(e), where=l > 0)
        dv = _ax(Dv, 4)
        vv = mem.gather(pv, T, b * vs[0] + j * vs[1] + hk * vs[2] + dv * vs[3]).astype(
            np.float64)
        o = (p[..., None] * vv).sum(3)                          # (b, h, i, dv)
        b4, h4, i4, d4 = _ax(B, 0, 4), _ax(H, 1, 4), _ax(Sq, 2, 4), _ax(Dv, 3, 4)
        mem.scatter(po, T, b4 * os_[0] + i4 * os_[1] + h4 * os_[2] + d4 * os_[3], o)
        if flags & spec.WRITE_LSE:
            with np.errstate(divide="ignore"):
                lse = np.where(l[..., 0] > 0, m[..., 0] + np.log(l[..., 0]), -np.inf)
            b3, h3, i3 = _ax(B, 0, 3), _ax(H, 1, 3), _ax(Sq, 2, 3)
            mem.scatter(pl, CT, b3 * ls[0] + h3 * ls[1] + i3 * ls[2], lse)
    elif name == "sdpa_bwd_dq":
        pq, pk, pv, po, pdo, pl, pm, pdq, pdelta = a[:9]
        B, H, Sq, Sk, ratio, D, Dv = a[9:16]
        st = a[16:47]
        scale, cap, flags = a[47:50]
        qs, ks, vs, os_, dos, ls, ms, dqs = (st[0:4], st[4:8], st[8:12], st[12:16], st[16:20],
                                             st[20:23], st[23:27], st[27:31])
        assert grid == (Sq, min(H, 65535), min(B, 65535))
        b, h, i, j = _ax(B, 0), _ax(H, 1), _ax(Sq, 2), _ax(Sk, 3)
        hk = h // ratio
        b4, h4, i4 = _ax(B, 0, 4), _ax(H, 1, 4), _ax(Sq, 2, 4)
        e4 = _ax(Dv, 3, 4)
        o = mem.gather(po, T, b4 * os_[0] + i4 * os_[1] + h4 * os_[2] + e4 * os_[3])
        do = mem.gather(pdo, T, b4 * dos[0] + i4 * dos[1] + h4 * dos[2] + e4 * dos[3])
        do = do.astype(np.float64)
        delta = (do * o.astype(np.float64)).sum(-1)            # (b, h, i)
        b3, h3, i3 = _ax(B, 0, 3), _ax(H, 1, 3), _ax(Sq, 2, 3)
        mem.scatter(pdelta, CT, (b3 * H + h3) * Sq + i3, delta)
        lse = mem.gather(pl, CT, b3 * ls[0] + h3 * ls[1] + i3 * ls[2]).astype(np.float64)
        s, dcap = _scores(mem, T, b, h, i, j, hk, pq, qs, pk, ks, D, pm, ms, scale, cap, flags)
        if flags & spec.CAUSAL:
            jend = np.clip(i[..., 0] + _off(Sq, Sk, flags) + 1, 0, Sk)
            s = np.where(j[..., 0] < jend, s, -np.inf)
        live = np.isfinite(lse)[..., None]
        p = np.where(live, np.exp(s - np.where(live, lse[..., None], 0.0)), 0.0)
        e5 = _ax(Dv, 4)
        vv = mem.gather(pv, T, b * vs[0] + j * vs[1] + hk * vs[2] + e5 * vs[3]).astype(
            np.float64)
        dp = (do[:, :, :, None, :] * vv).sum(-1)
        ds = p * (dp - delta[..., None]) * dcap
        d5 = _ax(D, 4)
        kk = mem.gather(pk, T, b * ks[0] + j * ks[1] + hk * ks[2] + d5 * ks[3]).astype(
            np.float64)
        dq = scale * (ds[..., None] * kk).sum(3)
        d4 = _ax(D, 3, 4)
        mem.scatter(pdq, T, b4 * dqs[0] + i4 * dqs[1] + h4 * dqs[2] + d4 * dqs[3], dq)
    elif name == "sdpa_bwd_dkdv":
        pq, pk, pv, pdo, pl, pdelta, pm, pdk, pdv = a[:9]
        B, Hk, Sq, Sk, ratio, D, Dv = a[9:16]
        st = a[16:47]
        scale, cap, flags = a[47:50]
        qs, ks, vs, dos, ls, ms, dks, dvs = (st[0:4], st[4:8], st[8:12], st[12:16], st[16:19],
                                             st[19:23], st[23:27], st[27:31])
        assert grid == (Sk, min(Hk, 65535), min(B, 65535))
        H = Hk * ratio
        b, h, i, j = _ax(B, 0), _ax(H, 1), _ax(Sq, 2), _ax(Sk, 3)
        hk = h // ratio if ratio else h
        b3, h3, i3 = _ax(B, 0, 3), _ax(H, 1, 3), _ax(Sq, 2, 3)
        if H and Sq:
            lse = mem.gather(pl, CT, b3 * ls[0] + h3 * ls[1] + i3 * ls[2]).astype(np.float64)
            s, dcap = _scores(mem, T, b, h, i, j, hk, pq, qs, pk, ks, D, pm, ms, scale, cap,
                              flags)
            if flags & spec.CAUSAL:
                istart = np.clip(j[..., 0] - _off(Sq, Sk, flags), 0, Sq)
                s = np.where(i[..., 0] >= istart, s, -np.inf)
            live = np.isfinite(lse)[..., None]
            p = np.where(live, np.exp(s - np.where(live, lse[..., None], 0.0)), 0.0)
            e5 = _ax(Dv, 4)
            do = mem.gather(pdo, T, b * dos[0] + i * dos[1] + h * dos[2] + e5 * dos[3])
            do = do.astype(np.float64)                            # (b, h, i, 1, e)
            vv = mem.gather(pv, T, b * vs[0] + j * vs[1] + hk * vs[2] + e5 * vs[3]).astype(
                np.float64)
            dp = (do * vv).sum(-1)
            delta = mem.gather(pdelta, CT, (b3 * H + h3) * Sq + i3).astype(np.float64)
            ds = np.where(p != 0, p * (dp - delta[..., None]) * dcap, 0.0)
            d5 = _ax(D, 4)
            qq = mem.gather(pq, T, b * qs[0] + i * qs[1] + h * qs[2] + d5 * qs[3]).astype(
                np.float64)
            dv = (p[..., None] * do).sum(2)                       # (b, h, j, e)
            dk = scale * (ds[..., None] * qq).sum(2)
            dv = dv.reshape(B, Hk, ratio, Sk, Dv).sum(2)
            dk = dk.reshape(B, Hk, ratio, Sk, D).sum(2)
        else:
            dv, dk = np.zeros((B, Hk, Sk, Dv)), np.zeros((B, Hk, Sk, D))
        b4, h4, j4 = _ax(B, 0, 4), _ax(Hk, 1, 4), _ax(Sk, 2, 4)
        mem.scatter(pdv, T, b4 * dvs[0] + j4 * dvs[1] + h4 * dvs[2] + _ax(Dv, 3, 4) * dvs[3], dv)
        mem.scatter(pdk, T, b4 * dks[0] + j4 * dks[1] + h4 * dks[2] + _ax(D, 3, 4) * dks[3], dk)
    else:
        raise AssertionError(name)


# ============================================================================ validation
def test_descriptor_defaults_and_derived():
    d = desc()
    assert d.head_dim_v == 3 and d.dtype == float32 and d.mask_kind == "none"
    assert math.isclose(d.softmax_scale, 1 / math.sqrt(3))
    assert desc(scale=0.25).softmax_scale == 0.25
    assert desc(dtype="f64").lse_dtype == float64 and desc(dtype="bf16").lse_dtype == float32
    assert d.q_shape() == (2, 5, 4, 3) and d.k_shape() == (2, 7, 2, 3)
    e = desc(head_dim_v=9)
    assert e.v_shape() == (2, 7, 2, 9) and e.out_shape() == (2, 5, 4, 9)
    assert e.lse_shape() == (2, 4, 5) and e.scores_shape() == (2, 4, 5, 7)
    m = desc(mask_dtype="bool")
    assert m.mask_kind == "bool" and m.mask_shape == (2, 4, 5, 7)
    assert desc(mask_dtype="f32", mask_shape=(7,)).mask_kind == "additive"
    assert desc(heads_q=0, heads_k=0).heads_q == 0


@pytest.mark.parametrize("kw,err", [
    (dict(batch=-1), InvalidProblemError),
    (dict(seqlen_q=1.5), InvalidProblemError),
    (dict(heads_q=True), InvalidProblemError),
    (dict(head_dim=0), InvalidProblemError),
    (dict(head_dim_v=0), InvalidProblemError),
    (dict(seqlen_k=2**31), UnsupportedError),
    (dict(batch=2**31), UnsupportedError),
    (dict(head_dim=2**31), UnsupportedError),
    (dict(dtype="int32"), UnsupportedError),
    (dict(dtype="fp8e4m3"), UnsupportedError),
    (dict(heads_q=4, heads_k=3), InvalidProblemError),
    (dict(heads_q=4, heads_k=0), InvalidProblemError),
    (dict(align="middle"), InvalidProblemError),
    (dict(softcap=-1.0), InvalidProblemError),
    (dict(softcap=float("inf")), InvalidProblemError),
    (dict(scale=float("nan")), InvalidProblemError),
    (dict(dropout_p=0.1), UnsupportedError),
    (dict(dropout_p=1.0), InvalidProblemError),
    (dict(mask_shape=(5, 7)), InvalidProblemError),                      # shape, no dtype
    (dict(mask_dtype="int32"), UnsupportedError),
    (dict(dtype="f16", mask_dtype="bf16"), UnsupportedError),
    (dict(dtype="f32", mask_dtype="f64"), UnsupportedError),
    (dict(mask_dtype="bool", mask_shape=(3, 7)), InvalidProblemError),   # not broadcastable
    (dict(mask_dtype="bool", mask_shape=(2, 4, 5, 6)), InvalidProblemError),
    (dict(mask_dtype="bool", mask_shape=(1, 2, 4, 5, 7)), InvalidProblemError),  # rank 5
    (dict(mask_dtype="bool", mask_shape=(1, -1, 7)), InvalidProblemError),
    (dict(mask_dtype="bool", mask_shape=7), InvalidProblemError),
])
def test_descriptor_errors(kw, err):
    with pytest.raises(err):
        desc(**kw)
    with pytest.raises(err):
        desc(SdpaBackwardDescriptor, **kw)


def test_mask_dtypes_and_broadcast_strides():
    for dt in ("f16", "bf16", "f32", "f64"):
        assert desc(dtype=dt, mask_dtype=dt).mask_kind == "additive"
        assert desc(dtype=dt, mask_dtype="f32").mask_kind == "additive"
        assert desc(dtype=dt, mask_dtype="bool").mask_kind == "bool"
    for shape in ((), (7,), (1, 7), (5, 1), (1, 1, 5, 7), (2, 1, 1, 7), (4, 5, 7)):
        assert desc(mask_dtype="bool", mask_shape=shape).mask_shape == shape
    assert mask_strides((5, 7), (7, 1)) == (0, 0, 7, 1)
    assert mask_strides((1, 1, 5, 7), (35, 35, 7, 1)) == (0, 0, 7, 1)
    assert mask_strides((2, 1, 1, 7), (7, 7, 7, 1)) == (7, 0, 0, 1)
    assert mask_strides((), ()) == (0, 0, 0, 0)
    assert mask_strides((2, 4, 5, 7), (1, 2, 8, 40)) == (1, 2, 8, 40)
    # flags per mask kind
    pl = lambda **kw: SdpaPlan.select(desc(**kw), PREF)._flags       # noqa: E731
    assert pl(dtype="f16", mask_dtype="f16") & spec.MASK_ADD
    assert pl(dtype="f16", mask_dtype="f32") & spec.MASK_F32
    assert pl(dtype="f32", mask_dtype="f32") & spec.MASK_ADD
    assert pl(mask_dtype="bool") == spec.MASK_BOOL | spec.BOTTOM_RIGHT
    assert pl(causal=True, align="top_left", softcap=2.0) == spec.CAUSAL | spec.SOFTCAP


def test_select_and_sku():
    p = SdpaPlan.select(desc(dtype="bf16"), PREF)
    assert p.sku().template == "sdpa_fwd" and dict(p.sku().knobs) == {"dtype": "bf16"}
    assert p.workspace_size() == 0 and p.precision_guarantee().deterministic
    assert p.precision_guarantee().accumulator == float32
    q = SdpaBackwardPlan.select(desc(SdpaBackwardDescriptor, dtype="f64"), PREF)
    assert q.sku().op == "sdpa_backward" and q.precision_guarantee().math_precision == float64
    with pytest.raises(InvalidProblemError):
        SdpaBackwardPlan.select(desc(), PREF)
    with pytest.raises(InvalidProblemError):
        SdpaBackwardPlan.select(object(), PREF)
    with pytest.raises(UnsupportedError):     # the delta workspace over the budget
        SdpaBackwardPlan.select(desc(SdpaBackwardDescriptor),
                                PlanPreference(arch=ArchSku.SM80, max_workspace_bytes=100))


def test_workspace_sizes():
    for dt, c in (("f16", 4), ("bf16", 4), ("f32", 4), ("f64", 8)):
        for b, hq, hk, sq in ((2, 4, 2, 5), (1, 1, 1, 1), (3, 8, 1, 1000), (0, 4, 2, 5),
                              (2, 4, 2, 0), (2, 0, 0, 5)):
            d = desc(SdpaBackwardDescriptor, dtype=dt, batch=b, heads_q=hq, heads_k=hk,
                     seqlen_q=sq)
            n = b * hq * sq * c
            assert SdpaBackwardPlan.select(d, PREF).workspace_size() == -(-n // 256) * 256
            assert SdpaPlan.select(desc(dtype=dt, batch=b, heads_q=hq, heads_k=hk,
                                        seqlen_q=sq), PREF).workspace_size() == 0


def test_sku_space():
    from baracuda_dsl.ops import get_template

    names = ("sdpa_fwd", "sdpa_bwd_dq", "sdpa_bwd_dkdv")
    for arch in ("sm80", "sm89", "sm90a"):
        total = 0
        for n in names:
            t = get_template(n)
            skus = t.skus(arch)
            assert len(skus) == len(spec.DTYPES) == 4
            total += len(skus)
            for k in skus:
                g = t.geometry(t.thaw(k))
                assert g.threads == spec.THREADS and g.cluster == 1
                assert g.smem_bytes < 48 * 1024
        assert total == 12
    # every plan's SKU is in the space
    for dt in ("f16", "bf16", "f32", "f64"):
        for plan, dcls, tn in ((SdpaPlan, SdpaDescriptor, "sdpa_fwd"),
                               (SdpaBackwardPlan, SdpaBackwardDescriptor, "sdpa_bwd_dkdv")):
            p = plan.select(desc(dcls, dtype=dt, mask_dtype="bool"), PREF)
            assert p.sku().knobs in get_template(tn).skus("sm90a")


# ============================================================================ operands
def _fwd_args(mem, d, **over):
    dt = d.dtype
    a = dict(q=mem.tensor(np.zeros(d.q_shape()), dt), k=mem.tensor(np.zeros(d.k_shape()), dt),
             v=mem.tensor(np.zeros(d.v_shape()), dt), out=mem.empty(d.out_shape(), dt),
             lse=mem.empty(d.lse_shape(), d.lse_dtype), mask=None)
    if d.mask_dtype is not None:
        a["mask"] = mem.tensor(np.zeros(d.mask_shape), d.mask_dtype)
    a.update(over)
    return SdpaArgs(**a)


def _bwd_args(mem, d, **over):
    dt = d.dtype
    f = _fwd_args(mem, d)
    a = dict(q=f.q, k=f.k, v=f.v, out=mem.tensor(np.zeros(d.out_shape()), dt),
             dout=mem.tensor(np.zeros(d.out_shape()), dt),
             lse=mem.tensor(np.zeros(d.lse_shape()), d.lse_dtype),
             dq=mem.empty(d.q_shape(), dt), dk=mem.empty(d.k_shape(), dt),
             dv=mem.empty(d.v_shape(), dt), mask=f.mask)
    a.update(over)
    return SdpaBackwardArgs(**a)


def _moved(v, device=None, ptr=None, dtype=None, shape=None, strides=None):
    return TensorView(v.ptr if ptr is None else ptr, v.shape if shape is None else shape,
                      v.strides if strides is None else strides,
                      v.dtype if dtype is None else dtype, v.device if device is None else device)


def test_forward_operand_errors(launches):
    mem = Mem()
    d = desc(dtype="f16", head_dim_v=6, mask_dtype="bool", mask_shape=(5, 7))
    plan = SdpaPlan.select(d, PREF)
    a = _fwd_args(mem, d)
    plan.can_implement(a)
    bad = [
        (dict(q=_moved(a.q, shape=(2, 5, 4, 4), strides=(80, 16, 4, 1))), InvalidProblemError),
        (dict(k=_moved(a.k, dtype=float32)), UnsupportedError),                   # dtype
        (dict(v=_moved(a.v, shape=(2, 7, 2, 3), strides=(42, 6, 3, 1))), InvalidProblemError),
        (dict(out=_moved(a.out, dtype=bfloat16)), UnsupportedError),
        (dict(lse=_moved(a.lse, dtype=float16)), UnsupportedError),               # lse f32
        (dict(lse=_moved(a.lse, shape=(2, 5, 4), strides=(20, 4, 1))), InvalidProblemError),
        (dict(mask=_moved(a.mask, dtype=float16)), UnsupportedError),             # mask dtype
        (dict(mask=_moved(a.mask, shape=(1, 5, 7), strides=(35, 7, 1))), InvalidProblemError),
        (dict(mask=None), InvalidProblemError),                                   # missing
        (dict(k=_moved(a.k, device=1)), DeviceMismatchError),
        (dict(mask=_moved(a.mask, device=1)), DeviceMismatchError),
        (dict(out=_moved(a.out, device=1)), DeviceMismatchError),
        (dict(q=_moved(a.q, ptr=a.q.ptr + 1)), MisalignedOperandError),
        (dict(out=a.q.with_shape(d.out_shape(), contiguous_strides(d.out_shape()))),
         InvalidProblemError),                                                    # out over q
        (dict(lse=_moved(a.lse, ptr=a.out.ptr, dtype=float32,
                         strides=(20, 5, 1))), InvalidProblemError),              # lse over out
        (dict(out=_moved(a.out, strides=(0, 24, 6, 1))), InvalidProblemError),   # broadcast
        (dict(lse=_moved(a.lse, strides=(1, 1, 1))), InvalidProblemError),       # self-overlap
    ]
    for over, err in bad:
        with pytest.raises(err):
            plan.run(SdpaArgs(**{**a.__dict__, **over}))
    # a mask given to a plan without one
    p2 = SdpaPlan.select(desc(dtype="f16", head_dim_v=6), PREF)
    with pytest.raises(InvalidProblemError, match="mask"):
        p2.run(a)
    assert not launches
    # lse is optional: no WRITE_LSE flag then
    plan.run(SdpaArgs(**{**a.__dict__, "lse": None}))
    assert launches[-1][3][5] == 0 and not launches[-1][3][38] & spec.WRITE_LSE


def test_backward_operand_errors(launches):
    mem = Mem()
    d = desc(SdpaBackwardDescriptor, dtype="bf16", mask_dtype="bf16", mask_shape=(2, 1, 1, 7))
    plan = SdpaBackwardPlan.select(d, PREF)
    a = _bwd_args(mem, d)
    ws = Workspace(mem.alloc(plan.workspace_size()), plan.workspace_size())
    plan.can_implement(a)
    bad = [
        (dict(dout=_moved(a.dout, dtype=float16)), UnsupportedError),
        (dict(out=_moved(a.out, shape=(2, 5, 4, 4), strides=(80, 16, 4, 1))),
         InvalidProblemError),
        (dict(lse=None), InvalidProblemError),                                    # required
        (dict(lse=_moved(a.lse, dtype=float64)), UnsupportedError),
        (dict(dq=_moved(a.dq, shape=(2, 5, 4, 4), strides=(80, 16, 4, 1))), InvalidProblemError),
        (dict(dk=_moved(a.dk, dtype=float32)), UnsupportedError),
        (dict(dv=_moved(a.dv, device=2)), DeviceMismatchError),
        (dict(dq=_moved(a.q)), InvalidProblemError),                              # dq is q
        (dict(dk=_moved(a.dout, shape=d.k_shape(), strides=contiguous_strides(d.k_shape()))),
         InvalidProblemError),                                                    # over dout
        (dict(dv=_moved(a.dk)), InvalidProblemError),                             # dv over dk
        (dict(dq=_moved(a.dq, strides=(60, 12, 0, 1))), InvalidProblemError),     # broadcast
        (dict(mask=_moved(a.mask, dtype=float32)), UnsupportedError),
    ]
    for over, err in bad:
        with pytest.raises(err):
            plan.run(SdpaBackwardArgs(**{**a.__dict__, **over}), workspace=ws)
    with pytest.raises(WorkspaceTooSmallError):
        plan.run(a)
    small = Workspace(ws.ptr, plan.workspace_size() - 1)
    with pytest.raises(WorkspaceTooSmallError):
        plan.run(a, workspace=small)
    odd = Workspace(ws.ptr + 2, plan.workspace_size())
    with pytest.raises(MisalignedOperandError):
        plan.run(a, workspace=odd)
    assert not launches
    plan.run(a, workspace=ws)
    assert [x[0] for x in launches] == ["sdpa_bwd_dq", "sdpa_bwd_dkdv"]


# ========================================================================= launch args
def test_forward_launch_arguments(launches):
    mem = Mem()
    d = desc(dtype="f32", head_dim_v=6, causal=True, align="top_left", softcap=3.0,
             scale=0.5, mask_dtype="f32", mask_shape=(1, 4, 1, 7))
    plan = SdpaPlan.select(d, PREF)
    a = _fwd_args(mem, d)
    plan.run(a)
    (name, knobs, grid, args, _), = launches
    assert name == "sdpa_fwd" and knobs == {"dtype": "f32"} and grid == (5, 4, 2)
    assert args[:6] == [a.q.ptr, a.k.ptr, a.v.ptr, a.mask.ptr, a.out.ptr, a.lse.ptr]
    assert args[6:13] == [2, 4, 5, 7, 2, 3, 6]
    assert args[13:17] == [60, 12, 3, 1]                  # q (b, s, h, d)
    assert args[17:21] == [42, 6, 3, 1]                   # k
    assert args[21:25] == [84, 12, 6, 1]                  # v
    assert args[25:29] == [0, 7, 0, 1]                    # mask (b, h, i, j), broadcast
    assert args[29:33] == [120, 24, 6, 1]                 # out
    assert args[33:36] == [20, 5, 1]                      # lse (b, h, i)
    assert args[36:38] == [0.5, 3.0]
    assert args[38] == spec.CAUSAL | spec.SOFTCAP | spec.MASK_ADD | spec.WRITE_LSE
    assert len(args) == len(spec.SDPA_FWD.params)


def test_backward_launch_arguments(launches):
    mem = Mem()
    d = desc(SdpaBackwardDescriptor, dtype="f64", heads_q=8, heads_k=2, head_dim_v=4,
             mask_dtype="bool", mask_shape=(5, 7))
    plan = SdpaBackwardPlan.select(d, PREF)
    a = _bwd_args(mem, d)
    ws = Workspace(mem.alloc(plan.workspace_size()), plan.workspace_size())
    plan.run(a, workspace=ws)
    (n1, k1, g1, a1, _), (n2, k2, g2, a2, _) = launches
    assert (n1, n2) == ("sdpa_bwd_dq", "sdpa_bwd_dkdv") and k1 == k2 == {"dtype": "f64"}
    assert g1 == (5, 8, 2) and g2 == (7, 2, 2)
    assert a1[:9] == [a.q.ptr, a.k.ptr, a.v.ptr, a.out.ptr, a.dout.ptr, a.lse.ptr, a.mask.ptr,
                      a.dq.ptr, ws.ptr]
    assert a2[:9] == [a.q.ptr, a.k.ptr, a.v.ptr, a.dout.ptr, a.lse.ptr, ws.ptr, a.mask.ptr,
                      a.dk.ptr, a.dv.ptr]
    assert a1[9:16] == [2, 8, 5, 7, 4, 3, 4] and a2[9:16] == [2, 2, 5, 7, 4, 3, 4]
    assert a1[39:43] == [0, 0, 7, 1] and a2[35:39] == [0, 0, 7, 1]     # mask strides
    assert a1[-1] == a2[-1] == spec.MASK_BOOL | spec.BOTTOM_RIGHT
    assert len(a1) == len(spec.SDPA_BWD_DQ.params) and len(a2) == len(spec.SDPA_BWD_DKDV.params)


def test_empty_problems(launches):
    mem = Mem()
    for kw in (dict(batch=0), dict(seqlen_q=0), dict(heads_q=0, heads_k=0)):
        d = desc(**kw)
        p = SdpaPlan.select(d, PREF)
        assert p.is_empty()
        p.run(_fwd_args(mem, d))
    assert not launches
    d = desc(seqlen_k=0)                          # no keys: out = 0, lse = -inf (a launch)
    SdpaPlan.select(d, PREF).run(_fwd_args(mem, d))
    assert [x[0] for x in launches] == ["sdpa_fwd"]
    launches.clear()
    for kw, names in ((dict(batch=0), []), (dict(heads_q=0, heads_k=0), []),
                      (dict(seqlen_q=0, seqlen_k=0), []),
                      (dict(seqlen_q=0), ["sdpa_bwd_dkdv"]),     # dk = dv = 0 still written
                      (dict(seqlen_k=0), ["sdpa_bwd_dq"]),       # dq = 0 still written
                      (dict(heads_q=0), ["sdpa_bwd_dkdv"])):     # no query heads: dk = dv = 0
        d = desc(SdpaBackwardDescriptor, **kw)
        p = SdpaBackwardPlan.select(d, PREF)
        assert p.is_empty() == (not names)
        n = p.workspace_size()
        ws = Workspace(mem.alloc(n), n) if n else None
        p.run(_bwd_args(mem, d), workspace=ws)
        assert [x[0] for x in launches] == names, kw
        launches.clear()


def test_large_grids_are_capped(launches):
    mem = Mem()
    d = desc(batch=70000, heads_q=1, heads_k=1, seqlen_q=1, seqlen_k=1, head_dim=1)
    SdpaPlan.select(d, PREF).run(_fwd_args(mem, d))
    d = desc(batch=1, heads_q=70000, heads_k=70000, seqlen_q=1, seqlen_k=1, head_dim=1)
    SdpaPlan.select(d, PREF).run(_fwd_args(mem, d))
    assert launches[0][2] == (1, 1, 65535) and launches[1][2] == (1, 65535, 1)


# ======================================================================= emulated runs
def _rand(rng, shape, lo=-1.0, hi=1.0):
    x = rng.uniform(lo, hi, shape)
    return np.where(np.abs(x) < 1e-3, 0.25, x)


def _run_fwd(mem, d, q, k, v, mask=None, launches=None, lse=True):
    plan = SdpaPlan.select(d, PREF)
    out = mem.empty(d.out_shape(), d.dtype)
    lv = mem.empty(d.lse_shape(), d.lse_dtype) if lse else None
    plan.run(SdpaArgs(q, k, v, out, lv, mask))
    for ln in launches:
        emulate(mem, ln)
    launches.clear()
    return mem.read(out), (mem.read(lv) if lse else None)


def _ref_mask(mem, m, d):
    if m is None:
        return None
    x = mem.read(m)
    return x.astype(bool) if d.mask_dtype == bool_ else x


def _check(got, want, tol, what):
    assert not np.isnan(got).any(), f"{what}: unwritten (NaN) elements"
    fin = np.isfinite(want)
    assert (np.isfinite(got) == fin).all() and (got[~fin] == want[~fin]).all(), what
    err = np.abs(got[fin] - want[fin])
    assert err.size == 0 or err.max() <= tol * max(1.0, np.abs(want[fin]).max()), \
        f"{what}: max error {err.max()}"


TOL = {"f64": 1e-12, "f32": 2e-6, "f16": 2e-3, "bf16": 1.6e-2}

CASES = [
    # (B, Sq, Sk, Hq, Hk, D, Dv, dtype, options)
    (2, 5, 7, 4, 2, 3, 3, "f64", dict()),
    (1, 6, 4, 8, 1, 7, 5, "f64", dict(causal=True)),                       # MQA, Sq > Sk
    (2, 4, 9, 4, 4, 1, 2, "f64", dict(causal=True, align="top_left")),
    (1, 9, 3, 2, 2, 4, 4, "f64", dict(causal=True, align="top_left", softcap=1.5, scale=0.7)),
    (2, 3, 6, 4, 1, 5, 3, "f64", dict(mask="bool", mask_shape=(2, 4, 3, 6))),
    (2, 3, 6, 4, 2, 5, 3, "f64", dict(mask="bool", mask_shape=(1, 1, 3, 6), causal=True)),
    (2, 3, 6, 4, 2, 5, 3, "f64", dict(mask="add", mask_shape=(2, 1, 1, 6))),
    (1, 4, 5, 2, 2, 3, 6, "f32", dict(mask="f32", mask_shape=(4, 5), softcap=2.0)),
    (2, 4, 5, 2, 1, 8, 8, "f16", dict(mask="add", mask_shape=(5,))),
    (2, 4, 5, 2, 1, 8, 8, "f16", dict(mask="f32", mask_shape=(2, 2, 4, 5))),
    (1, 3, 4, 4, 2, 6, 2, "bf16", dict(mask="bool", mask_shape=(4, 3, 4), causal=True)),
    (1, 3, 0, 2, 1, 4, 4, "f64", dict()),                                  # no keys
    (1, 1, 1, 1, 1, 1, 1, "f64", dict()),
]


def _case(c, cls=SdpaDescriptor):
    B, Sq, Sk, Hq, Hk, D, Dv, dt, opt = c
    opt = dict(opt)
    kind = opt.pop("mask", None)
    mshape = opt.pop("mask_shape", None)
    mdt = {None: None, "bool": "bool", "add": dt, "f32": "f32"}[kind]
    return cls(B, Sq, Sk, Hq, Hk, D, Dv, SHORT[dt], mask_dtype=mdt,
               mask_shape=mshape if kind else None, **opt)


def _inputs(mem, d, seed):
    rng = np.random.default_rng(seed)
    q = mem.tensor(_rand(rng, d.q_shape()), d.dtype, pad=3)
    k = mem.tensor(_rand(rng, d.k_shape()), d.dtype, pad=1)
    v = mem.tensor(_rand(rng, d.v_shape()), d.dtype)
    m = None
    if d.mask_kind == "bool":
        mk = rng.uniform(size=d.mask_shape) < 0.7
        if mk.ndim >= 2 and mk.shape[-2] > 1:
            mk[..., 1, :] = False                                          # a masked row
        m = mem.tensor(mk, bool_, pad=1)
    elif d.mask_kind == "additive":
        x = rng.normal(size=d.mask_shape)
        x[rng.uniform(size=d.mask_shape) < 0.2] = -np.inf
        m = mem.tensor(x, d.mask_dtype, pad=1)
    return q, k, v, m


@pytest.mark.parametrize("case", CASES)
def test_emulated_forward_matches_reference(case, launches):
    mem = Mem()
    d = _case(case)
    q, k, v, m = _inputs(mem, d, 1)
    out, lse = _run_fwd(mem, d, q, k, v, m, launches)
    r_out, r_lse = ref.attention(mem.read(q), mem.read(k), mem.read(v), scale=d.scale,
                                 causal=d.causal, softcap=d.softcap, align=d.align,
                                 attn_mask=_ref_mask(mem, m, d))
    tol = TOL[d.dtype.short]
    _check(out, r_out, tol, "out")
    _check(lse, r_lse, max(tol, 1e-6) if d.dtype != float64 else tol, "lse")
    if d.seqlen_k == 0:
        assert (out == 0).all() and (lse == -np.inf).all()


@pytest.mark.parametrize("case", CASES)
def test_emulated_backward_matches_reference(case, launches):
    mem = Mem()
    d = _case(case, SdpaBackwardDescriptor)
    q, k, v, m = _inputs(mem, d, 2)
    fwd = _case(case)
    out_v = mem.empty(d.out_shape(), d.dtype)
    lse_v = mem.empty(d.lse_shape(), d.lse_dtype)
    SdpaPlan.select(fwd, PREF).run(SdpaArgs(q, k, v, out_v, lse_v, m))
    rng = np.random.default_rng(3)
    do = mem.tensor(_rand(rng, d.out_shape()), d.dtype)
    plan = SdpaBackwardPlan.select(d, PREF)
    n = plan.workspace_size()
    ws = Workspace(mem.alloc(n), n) if n else None
    grads = [mem.empty(s, d.dtype) for s in (d.q_shape(), d.k_shape(), d.v_shape())]
    plan.run(SdpaBackwardArgs(q, k, v, out_v, do, lse_v, *grads, m), workspace=ws)
    for ln in launches:
        emulate(mem, ln)
    rq, rk, rv = ref.attention_backward(mem.read(q), mem.read(k), mem.read(v), mem.read(do),
                                        scale=d.scale, causal=d.causal, softcap=d.softcap,
                                        align=d.align, attn_mask=_ref_mask(mem, m, d))
    # half inputs: out is rounded before delta = dO·O, and the gradients once more
    tol = TOL[d.dtype.short] * (4 if d.dtype.itemsize == 2 else 1)
    for g, r, nm in zip(grads, (rq, rk, rv), ("dq", "dk", "dv")):
        _check(mem.read(g), r, tol, nm)


def test_emulated_packed_qkv_and_negative_strides(launches):
    """q / k / v as views of one packed (B, S, 3, H, D) tensor, and a k that walks its
    sequence backwards (negative stride)."""
    mem = Mem()
    B, S, H, D = 2, 6, 3, 5
    rng = np.random.default_rng(4)
    packed = _rand(rng, (B, S, 3, H, D))
    base = mem.tensor(packed, float64)
    st = base.strides
    q, k, v = (TensorView(base.ptr + t * st[2] * 8, (B, S, H, D), (st[0], st[1], st[3], st[4]),
                          float64, 0) for t in range(3))
    d = SdpaDescriptor(B, S, S, H, H, D, dtype="f64", causal=True)
    out, lse = _run_fwd(mem, d, q, k, v, None, launches)
    r_out, r_lse = ref.attention(packed[:, :, 0], packed[:, :, 1], packed[:, :, 2], causal=True)
    _check(out, r_out, 1e-12, "out")
    _check(lse, r_lse, 1e-12, "lse")
    kr = TensorView(k.ptr + (S - 1) * st[1] * 8, k.shape, (st[0], -st[1], st[3], st[4]),
                    float64, 0)
    out, _ = _run_fwd(mem, d, q, kr, v, None, launches, lse=False)
    r_out, _ = ref.attention(packed[:, :, 0], packed[:, ::-1, 1], packed[:, :, 2], causal=True)
    _check(out, r_out, 1e-12, "out (reversed k)")


def test_emulated_fully_masked_rows_give_zero_and_neg_inf(launches):
    mem = Mem()
    d = SdpaDescriptor(1, 4, 5, 2, 2, 3, dtype="f64", mask_dtype="bool", mask_shape=(4, 5))
    rng = np.random.default_rng(5)
    mk = np.ones((4, 5), bool)
    mk[2] = False
    q, k, v = (mem.tensor(_rand(rng, s), float64) for s in (d.q_shape(), d.k_shape(),
                                                           d.v_shape()))
    out, lse = _run_fwd(mem, d, q, k, v, mem.tensor(mk, bool_), launches)
    assert (out[:, 2] == 0).all() and (lse[:, :, 2] == -np.inf).all()
    assert np.isfinite(lse[:, :, [0, 1, 3]]).all()


# ========================================================================= cross-compile
SAMPLES = {
    ArchSku.SM80: [("sdpa_fwd", "bf16"), ("sdpa_bwd_dq", "f16"), ("sdpa_bwd_dkdv", "f64")],
    ArchSku.SM89: [("sdpa_fwd", "f64"), ("sdpa_bwd_dq", "f32"), ("sdpa_bwd_dkdv", "bf16")],
    ArchSku.SM90A: [("sdpa_fwd", "f16"), ("sdpa_bwd_dq", "bf16"), ("sdpa_bwd_dkdv", "f32")],
}


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    for name, dt in SAMPLES[arch]:
        kn = freeze_knobs(spec.SdpaKnobs(dtype=dt))
        assert kn in get_template(name).skus(arch.value)
        cubin, meta = compile_sku(name, kn, arch, timeout=600)
        assert cubin[:4] == b"\x7fELF" and meta["threads"] == spec.THREADS
        assert meta["ptx_target"] == arch.cute_arch



def test_gpu_test_error_scales():
    """The GPU tests' error scales (tests/_attention_ref_sdpa.py): P reproduces the reference
    output (P·V = out, rows sum to 1 or 0), the gradient scales bound |dq|, |dk|, |dv|."""
    from tests import _attention_ref_sdpa as sref

    rng = np.random.default_rng(7)
    q, k, v, do = (_rand(rng, s) for s in ((2, 5, 4, 3), (2, 6, 2, 3), (2, 6, 2, 4),
                                           (2, 5, 4, 4)))
    mask = rng.uniform(size=(2, 1, 5, 6)) < 0.6
    mask[..., 2, :] = False
    kw = dict(causal=True, align="top_left", attn_mask=mask, softcap=1.5)
    p, out, lse = sref.probabilities(q, k, v, **kw)
    r_out, r_lse = ref.attention(q, k, v, **kw)
    np.testing.assert_allclose(out, r_out, rtol=0, atol=0)
    np.testing.assert_allclose(np.einsum("bhqk,bkhd->bqhd", p, np.repeat(v, 2, axis=2)), r_out,
                               rtol=1e-12, atol=1e-14)
    rows = p.sum(-1)
    assert np.allclose(rows[np.isfinite(r_lse)], 1.0) and (rows[~np.isfinite(r_lse)] == 0).all()
    scales = sref.grad_scales(q, k, v, do, **kw)
    for g, s in zip(ref.attention_backward(q, k, v, do, **kw), scales):
        assert g.shape == s.shape and (np.abs(g) <= s * (1 + 1e-12) + 1e-15).all()
    assert sref.score_scale(q, k, softcap=1.5) == 1.5
    assert sref.score_scale(q, k, attn_mask=np.array([-np.inf, -2.0])) > 2.0
