"""Fused linear + cross-entropy: loss = CE(x @ Wᵀ, target) without materialising the (n, v)
logits.

x (n, k), W (v, k) (unit stride along k for W; x as the GEMM accepts), class-index targets
(int32 / int64) with ``ignore_index``; reductions none / mean / sum (torch semantics, no class
weights / label smoothing in this version).  dtypes f16, bf16 (tensor-core GEMM, f32
accumulation and f32 logits), f32, f64 (f64 logits).

Forward, per vocabulary chunk of ``chunk`` columns: GemmPlan writes the chunk's logits
z = x @ W[v0:v0+vc]ᵀ (f32; f64 for f64) into the workspace, then one row kernel merges the
chunk's (max, sum-exp) into running per-row statistics and picks up the target logit; the last
chunk finalises lse and the row losses, and the fixed-order loss reduction finishes
mean / sum (deterministic).

Backward, per chunk: recompute z, dz = (softmax − onehot)·g (the operand dtype), then
dx += dz @ W_c (GemmPlan, f32 accumulator with beta = 1 after the first chunk) and
dW_c = dzᵀ @ x (GemmPlan).  Half-type dx is cast from the f32 accumulator at the end.

Workspace / peak memory (bytes; z = 4, or 8 for f64; e = element size):
    forward:  n·chunk·z + 6·n·z (+ the GEMM's workspace)
    backward: n·chunk·(z + e) + n·k·4 (half types) (+ the GEMM's workspace)
versus n·v·e for the unfused logits (plus n·v·e for the unfused dlogits): with n = 8192,
v = 128256, bf16 the unfused logits alone take 2.1 GB; the fused forward with chunk = 4096
takes 134 MB, the backward 201 MB + 134 MB (dx accumulator, k = 4096).  ``chunk`` (default
4096) is the knob trading workspace for GEMM efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import FP4, DType, float32, float64, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, align_up, check_dtype, view_arg
from ...tensor import TensorView
from .specs import cross_entropy as spec
from ...vocabulary import Workspace
from .cross_entropy import (REDUCTIONS, check_size, cross_entropy_sku, ptr_of, scalar_view,
                            stats_dtype, status_view, vector_view)

DEFAULT_CHUNK = 4096


def _gemm():
    """The GEMM plan module (ImportError when it is not available)."""
    from ..gemm import gemm

    return gemm


@dataclass(frozen=True)
class LinearCrossEntropyDescriptor:
    """loss = cross_entropy(x (n, k) @ W (v, k)ᵀ, target (n,)), chunked over v."""

    n: int
    k: int
    v: int
    dtype: DType = float32
    reduction: str = "mean"
    ignore_index: int = -100
    index_dtype: DType = int64
    chunk: int = DEFAULT_CHUNK

    def __post_init__(self):
        who = "LinearCrossEntropy"
        object.__setattr__(self, "n", check_size(self.n, f"{who}: n"))
        object.__setattr__(self, "k", check_size(self.k, f"{who}: k", 1))
        object.__setattr__(self, "v", check_size(self.v, f"{who}: v", 1))
        object.__setattr__(self, "chunk", check_size(self.chunk, f"{who}: chunk", 1))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, who))
        object.__setattr__(self, "index_dtype",
                           check_dtype(self.index_dtype, (int32, int64), f"{who} targets"))
        if self.reduction not in REDUCTIONS:
            raise InvalidProblemError(f"{who}: reduction must be one of {REDUCTIONS}, got "
                                      f"{self.reduction!r}")
        if isinstance(self.ignore_index, bool) or not isinstance(self.ignore_index, int):
            raise InvalidProblemError(f"{who}: ignore_index must be an int")
        if self.n * self.chunk > 2**31 - 1:
            raise UnsupportedError(f"{who}: n·chunk must be < 2^31 (use a smaller chunk)")


@dataclass(frozen=True)
class LinearCrossEntropyBackwardDescriptor(LinearCrossEntropyDescriptor):
    """Gradients of :class:`LinearCrossEntropyDescriptor`'s loss w.r.t. x and W."""


@dataclass
class LinearCrossEntropyArgs:
    """x (n, k), weight (v, k), target (n,), loss ((n,) for none, else one element; x dtype);
    optional outputs lse (n,) and total_weight (one element) in f32 (f64 for f64), status."""

    x: object
    weight: object
    target: object
    loss: object
    lse: object = None
    total_weight: object = None
    status: object = None


@dataclass
class LinearCrossEntropyBackwardArgs:
    """x, weight, target as the forward; lse (n,) and total_weight (mean) from the forward;
    grad_loss ((n,) for none, else one element); outputs dx (n, k) and dweight (v, k)."""

    x: object
    weight: object
    target: object
    lse: object
    grad_loss: object
    dx: object
    dweight: object
    total_weight: object = None
    status: object = None


def _z_dtype(dt: DType) -> DType:
    return float64 if dt == float64 else float32


def _vrows(v: TensorView, v0: int, shape, strides) -> TensorView:
    """A view of ``shape`` / ``strides`` over (v, k) matrix ``v`` from its row ``v0``."""
    return TensorView._trusted(v.ptr + v0 * v.strides[0] * v.dtype.itemsize, tuple(shape),
                               tuple(strides), v.dtype, v.device, None)


class _LinearCE(Plan):
    def _plan(self) -> None:
        d = self.desc
        self._gm = _gemm()
        self._ct = stats_dtype(d.dtype)
        self._zdt = _z_dtype(d.dtype)
        nch = -(-d.v // d.chunk)
        self._chunks = [(j * d.chunk, min(d.chunk, d.v - j * d.chunk)) for j in range(nch)]
        self._gplans = {}
        self._red = spec.LossReduceKnobs(d.dtype.short)
        self._setup()
        self._sku = cross_entropy_sku(self._op, d.dtype, self._arch, spec.LCE_CHUNK.name,
                                      self._lce_knobs(d.chunk))

    def _gp(self, *key, **kw):
        p = self._gplans.get((key, tuple(sorted(kw.items()))))
        if p is None:
            p = self._gplans[(key, tuple(sorted(kw.items())))] = self._gm.GemmPlan.select(
                self._gm.GemmDescriptor(*key, **kw), self.pref)
        return p

    def _lce_knobs(self, vc: int, op: str = "fw") -> spec.LceChunkKnobs:
        """The chunk kernel's knobs for a chunk of ``vc`` columns (the vectorised loop when
        ``vc`` and the chunk stride are multiples of the vector width, the generic one else),
        one object per distinct knob set (``Plan._kernel`` memoises by identity)."""
        zdt = self._zdt.short
        geo = spec.FW_ROWS.loop(zdt)
        if vc % geo.vec or self.desc.chunk % geo.vec:
            geo = spec.FW_ROWS.generic()
        k = spec.LceChunkKnobs.of(geo, dtype=zdt, op=op, ddt=self.desc.dtype.short)
        return self.__dict__.setdefault("_kmemo", {}).setdefault(k, k)

    def _slot(self, name, nbytes):
        lay = self.__dict__.setdefault("_lay", {})
        lay[name] = self.__dict__.get("_off", 0)
        self._off = lay[name] + align_up(nbytes)

    def workspace_size(self) -> int:
        return self._off

    def is_empty(self) -> bool:
        return False

    def _per_row(self, obj, name: str, dev):
        """A per-row loss-shaped view: (n,) for reduction none, else a single element."""
        d = self.desc
        if d.reduction == "none":
            return vector_view(obj, name, d.n, d.dtype, dev, optional=False)
        return scalar_view(obj, name, d.dtype, dev)

    def _xw(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=(d.n, d.k), dtype=d.dtype)
        dev = x.device
        w = view_arg(args.weight, "weight", shape=(d.v, d.k), dtype=d.dtype, device=dev)
        if d.k > 1 and w.strides[1] != 1:
            raise UnsupportedError("weight: must have unit stride along k (row-major (v, k))")
        t = view_arg(args.target, "target", shape=(d.n,), device=dev)
        if t.dtype != d.index_dtype:
            raise UnsupportedError(f"target: dtype {t.dtype.name} != descriptor index_dtype "
                                   f"{d.index_dtype.name}")
        if d.n > 1 and t.strides[0] != 1:
            raise UnsupportedError("target: class indices must be contiguous")
        return x, w, t, dev

    def _wchunk_t(self, w: TensorView, v0: int, vc: int) -> TensorView:
        """W[v0:v0+vc]ᵀ as a (k, vc) view."""
        return _vrows(w, v0, (self.desc.k, vc), (w.strides[1], w.strides[0]))

    def _z(self, ws: Workspace, vc: int, dev: int) -> TensorView:
        return TensorView._trusted(ws.ptr + self._lay["z"], (self.desc.n, vc),
                                   (self.desc.chunk, 1), self._zdt, dev, None)

    def _gws(self, ws: Workspace):
        return Workspace(ws.ptr + self._lay["gemm"], self._gws_n, None) if self._gws_n else None

    def _logits(self, x, w, ws, v0, vc, dev, stream):
        g = self._gm
        d = self.desc
        gp = self._gp(d.n, vc, d.k, d.dtype, out_dtype=self._zdt)
        gp.run(g.GemmArgs(x, self._wchunk_t(w, v0, vc), self._z(ws, vc, dev)), stream,
               self._gws(ws))


class LinearCrossEntropyPlan(_LinearCE):
    """Fused linear + cross-entropy forward (module docstring): per vocabulary chunk a GEMM and
    a row-statistics kernel; the logits never exist beyond one chunk.  Deterministic."""

    descriptor = LinearCrossEntropyDescriptor
    _op = "linear_cross_entropy"

    def _setup(self):
        d = self.desc
        z = self._zdt.itemsize
        self._slot("z", d.n * d.chunk * z)
        self._slot("stats", d.n * spec.LCE_STATS * z)
        gw = 0
        for _, vc in self._chunks:
            gw = max(gw, self._gp(d.n, vc, d.k, d.dtype, out_dtype=self._zdt).workspace_size())
        self._gws_n = gw
        self._slot("gemm", gw)

    def _bind(self, args):
        d = self.desc
        x, w, t, dev = self._xw(args)
        loss = self._per_row(args.loss, "loss", dev)
        lse = vector_view(args.lse, "lse", d.n, self._ct, dev)
        tw = scalar_view(args.total_weight, "total_weight", self._ct, dev, optional=True)
        if tw is not None and d.reduction == "none":
            raise InvalidProblemError("total_weight is an output of mean / sum only")
        return x, w, t, loss, lse, tw, status_view(args.status, dev), dev

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        d = self.desc
        x, w, t, loss, lse, tw, st, dev = bound
        stats = ws.ptr + self._lay["stats"]
        ts = 2 if t.dtype == int64 else 1
        z = self._zdt.itemsize
        if d.n > 0:
            last = len(self._chunks) - 1
            for j, (v0, vc) in enumerate(self._chunks):
                self._logits(x, w, ws, v0, vc, dev, stream)
                flags = ((spec.LCE_FIRST if j == 0 else 0) | (spec.LCE_LAST if j == last else 0)
                         | (spec.HAS_STATUS if st is not None else 0))
                lp = lsp = 0
                if j == last:
                    if d.reduction == "none":
                        flags |= spec.LCE_WRITE_LOSS
                        lp = loss.ptr
                    if lse is not None:
                        flags |= spec.LCE_WRITE_LSE
                        lsp = lse.ptr
                kk = self._lce_knobs(vc)
                kern = self._kernel(spec.LCE_CHUNK, kk, dev)
                kern.launch((kk.blocks(d.n), 1, 1),
                            (ws.ptr + self._lay["z"], t.ptr, stats, lp, 0, lsp, ptr_of(st), d.n, vc,
                             d.chunk, 0, v0, d.v, ts, int(d.ignore_index), flags), stream)
        if d.reduction != "none":
            rflags = (spec.RED_MEAN if d.reduction == "mean" else 0) | (
                spec.RED_TW if tw is not None else 0)
            rk = self._kernel(spec.LOSS_REDUCE, self._red, dev)
            rk.launch((1, 1, 1), (stats + 4 * z, stats + 5 * z, loss.ptr, ptr_of(tw), d.n,
                                  spec.LCE_STATS, rflags), stream)



class LinearCrossEntropyBackwardPlan(_LinearCE):
    """Fused linear + cross-entropy backward: per chunk recompute the logits, form dlogits and
    accumulate dx (f32) and write dW's rows of the chunk via GemmPlan."""

    descriptor = LinearCrossEntropyBackwardDescriptor
    _op = "linear_cross_entropy_bw"

    def _setup(self):
        d = self.desc
        self._slot("z", d.n * d.chunk * self._zdt.itemsize)
        self._slot("dz", d.n * d.chunk * d.dtype.itemsize)
        self._acc_dt = float32 if d.dtype.itemsize == 2 else d.dtype
        self._sep_acc = self._acc_dt != d.dtype
        self._slot("acc", d.n * d.k * 4 if self._sep_acc else 0)
        gw = 0
        for _, vc in self._chunks:
            gw = max(gw, self._gp(d.n, vc, d.k, d.dtype, out_dtype=self._zdt).workspace_size(),
                     self._gp(d.n, d.k, vc, d.dtype, out_dtype=self._acc_dt,
                              beta=1.0).workspace_size(),
                     self._gp(d.n, d.k, vc, d.dtype, out_dtype=self._acc_dt,
                              beta=0.0).workspace_size(),
                     self._gp(vc, d.k, d.n, d.dtype).workspace_size())
        self._gws_n = gw
        self._slot("gemm", gw)

    def _bind(self, args):
        d = self.desc
        x, w, t, dev = self._xw(args)
        lse = vector_view(args.lse, "lse", d.n, self._ct, dev, optional=False)
        g = self._per_row(args.grad_loss, "grad_loss", dev)
        tw = scalar_view(args.total_weight, "total_weight", self._ct, dev,
                          optional=d.reduction != "mean")
        dx = view_arg(args.dx, "dx", shape=(d.n, d.k), dtype=d.dtype, device=dev)
        dw = view_arg(args.dweight, "dweight", shape=(d.v, d.k), dtype=d.dtype, device=dev)
        return x, w, t, lse, g, tw, dx, dw, status_view(args.status, dev), dev

    def _fill0(self, out: TensorView, stream: int) -> None:
        from ..elementwise.elementwise import (ElementwiseArgs, ElementwiseDescriptor,
                                               ElementwisePlan)

        p = ElementwisePlan.select(ElementwiseDescriptor("copy", (None,), out.dtype, None, (),
                                                         tuple(out.shape)), self.pref)
        p.run(ElementwiseArgs([0.0], [out]), stream)

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        d = self.desc
        g = self._gm
        x, w, t, lse, gl, tw, dx, dw, st, dev = bound
        if d.n == 0:
            self._fill0(dw, stream)
            return
        ts = 2 if t.dtype == int64 else 1
        acc = dx
        if self._sep_acc:
            acc = TensorView._trusted(ws.ptr + self._lay["acc"], (d.n, d.k), (d.k, 1), float32,
                                      dev, None)
        flags = ((spec.HAS_STATUS if st is not None else 0)
                 | (spec.G_ROW if d.reduction == "none" else 0)
                 | (spec.G_MEAN if d.reduction == "mean" else 0))
        dzp = ws.ptr + self._lay["dz"]
        for j, (v0, vc) in enumerate(self._chunks):
            self._logits(x, w, ws, v0, vc, dev, stream)
            kk = self._lce_knobs(vc, "bw")
            kern = self._kernel(spec.LCE_CHUNK, kk, dev)
            kern.launch((kk.blocks(d.n), 1, 1),
                        (ws.ptr + self._lay["z"], t.ptr, lse.ptr, dzp, gl.ptr, ptr_of(tw),
                         ptr_of(st), d.n, vc, d.chunk, d.chunk, v0, d.v, ts,
                         int(d.ignore_index), flags), stream)
            dz = TensorView._trusted(dzp, (d.n, vc), (d.chunk, 1), d.dtype, dev, None)
            dzt = TensorView._trusted(dzp, (vc, d.n), (1, d.chunk), d.dtype, dev, None)
            wc = _vrows(w, v0, (vc, d.k), w.strides)
            dwc = _vrows(dw, v0, (vc, d.k), dw.strides)
            self._gp(d.n, d.k, vc, d.dtype, out_dtype=self._acc_dt,
                     beta=0.0 if j == 0 else 1.0).run(g.GemmArgs(dz, wc, acc), stream,
                                                       self._gws(ws))
            self._gp(vc, d.k, d.n, d.dtype).run(g.GemmArgs(dzt, x, dwc), stream, self._gws(ws))
        if self._sep_acc:
            from ..elementwise.elementwise import (ElementwiseArgs, ElementwiseDescriptor,
                                                   ElementwisePlan)

            p = self.__dict__.get("_cast")
            if p is None:
                p = self._cast = ElementwisePlan.select(ElementwiseDescriptor(
                    "cast", ((d.n, d.k),), float32, d.dtype), self.pref)
            p.run(ElementwiseArgs([acc], [dx]), stream)


__all__ = [
    "LinearCrossEntropyDescriptor", "LinearCrossEntropyArgs", "LinearCrossEntropyPlan",
    "LinearCrossEntropyBackwardDescriptor", "LinearCrossEntropyBackwardArgs",
    "LinearCrossEntropyBackwardPlan",
]
