"""1-D index gather and scatter (every dtype, bit-exact; the building block of the set functions).

``GatherPlan``:  ``dst[i] = src[idx[i]]`` for i < n, ``src`` of length m; an index outside [0, m)
is clamped into range (never an out-of-bounds read; callers validate indices when they need an
error).  ``ScatterPlan``: ``dst[idx[i]] = src[i]`` for i < n, ``dst`` of length m; indices outside
[0, m) are skipped; with repeated indices one writer wins (unspecified which).  Every operand is a
1-D view with any stride; index dtype int32 or int64.  No workspace; deterministic for distinct
indices.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import ALL_DTYPES, DType, int32, int64
from ...errors import InvalidProblemError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import gather as spec

_DTYPES = tuple(d for d in ALL_DTYPES if d.itemsize in spec.ITEMSIZES)


@dataclass(frozen=True)
class IndexCopyDescriptor:
    """``n`` indexed elements, ``m`` the length of the indexed array, element ``dtype`` and the
    ``index`` dtype (int32 / int64)."""

    n: int
    m: int
    dtype: DType
    index: DType = int64

    def __post_init__(self):
        for name in ("n", "m"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidProblemError(f"IndexCopy: {name} must be an int >= 0, got {v!r}")
        object.__setattr__(self, "dtype", check_dtype(self.dtype, _DTYPES, "IndexCopy"))
        object.__setattr__(self, "index", check_dtype(self.index, (int32, int64),
                                                      "IndexCopy index"))


@dataclass
class IndexCopyArgs:
    """src, idx, dst: 1-D device views (any stride)."""

    src: object
    idx: object
    dst: object


class _IndexCopyPlan(Plan):
    """Shared plan of GatherPlan / ScatterPlan (``_mode``)."""

    descriptor = IndexCopyDescriptor
    _mode = "gather"

    def _plan(self) -> None:
        d = self.desc
        if self._mode == "gather" and d.m == 0 and d.n:
            raise InvalidProblemError("Gather: cannot index into an empty array")
        self._knobs = spec.GatherKnobs(itemsize=d.dtype.itemsize, mode=self._mode,
                                       index=d.index.short)
        pg = PrecisionGuarantee(math_precision=d.dtype, accumulator=d.dtype)
        self._sku = KernelSku(OpCategory.INDEXING, self._mode, d.dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.index,
                              template=spec.GATHER.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self.desc.n == 0

    def _bind(self, args):
        d = self.desc
        src_len, dst_len = (d.m, d.n) if self._mode == "gather" else (d.n, d.m)
        idx = view_arg(args.idx, "idx", shape=(d.n,), dtype=d.index)
        src = view_arg(args.src, "src", shape=(src_len,), dtype=d.dtype, device=idx.device)
        dst = view_arg(args.dst, "dst", shape=(dst_len,), dtype=d.dtype, device=idx.device)
        if dst_len > 1 and dst.strides[0] == 0:
            raise InvalidProblemError("dst may not have a zero (broadcast) stride")
        return src, idx, dst

    def _launch(self, bound, stream: int, ws) -> None:
        src, idx, dst = bound
        d = self.desc
        lk = self._kernel(spec.GATHER, self._knobs, idx.device)
        lk.launch(((d.n + spec.THREADS - 1) // spec.THREADS, 1, 1),
                  [src.ptr, idx.ptr, dst.ptr, d.n, d.m, src.strides[0], idx.strides[0],
                   dst.strides[0]], stream)


class GatherPlan(_IndexCopyPlan):
    """dst[i] = src[idx[i]] (indices clamped into [0, m)); any dtype, bit-exact."""

    _mode = "gather"


class ScatterPlan(_IndexCopyPlan):
    """dst[idx[i]] = src[i] (out-of-range indices skipped); any dtype, bit-exact."""

    _mode = "scatter"
