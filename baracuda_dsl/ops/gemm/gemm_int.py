"""Integer GEMM (issue 7's ``IntGemmPlan``) on tensor cores (``mma.sync`` m16n8k32, s32 accumulate):

    dequant=False:  c (int32)   = a @ b                                   exact (wraps modulo 2**32
                                                                          past the int32 range)
    dequant=True:   c (float32) = scale_a[i] · scale_b[j] · float32(a @ b)

a (m, k) and b (k, n) are int8 or uint8 (each independently: s8·s8, s8·u8, u8·s8, u8·u8).
``scale_a`` is a float32 vector of length m (per row) or 1 (one scale broadcast to every row);
``scale_b`` likewise of length n or 1 (per column / broadcast).  The dequantised value is
computed in f32 (the int32 sum is converted to f32 first: exact up to 2**24, then f32
rounding), so it matches a float64 reference to ~1e-7 relative.

Wired layouts (kernel ``gemm_int8``, ``ops/gemm/specs/gemm_int8.py``; sm80, sm89, sm90a): a
row-major (unit stride along k) and b column-major (unit stride along k, i.e. b = w.T of a
row-major (n, k) weight); other layouts raise UnsupportedError (make a k-major copy first,
e.g. with the contiguize plan).  Alignment: base pointers 16-byte aligned, k and the leading
dims (row stride of a, column stride of b) multiples of 16 — else MisalignedOperandError /
UnsupportedError, raised before any launch.  k = 0 is not wired (UnsupportedError).  c has any
strides and must not alias a, b or the scales.  No workspace; deterministic.

Tile: 128×128 (×64 bytes of k, 4 stages) when it yields >= ``BIG_TILE_MIN_CTAS`` CTAs, else
64×64 (×128 bytes); ``PlanPreference(tuning=GemmTuning(tile=...))`` forces one (split-K is not
wired: ``GemmTuning.splits`` must be None or 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dtypes import DType, float32, int8, int32, uint8
from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_writable_no_overlap, view_arg
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import gemm_int8 as spec
from .tuning import GemmTuning

INT_DTYPES = (int8, uint8)
#: the 128x128 tile is used when it gives at least this many CTAs (about one H100 wave)
BIG_TILE_MIN_CTAS = 96
_I32 = 2 ** 31 - 1
_V = spec.INT8_VEC
#: dtype short name -> the PTX type of the mma (the kernel knob)
_PTX = {"i8": "s8", "u8": "u8"}


@dataclass(frozen=True)
class IntGemmDescriptor:
    """c (m, n) = a (m, k) @ b (k, n) with a_dtype / b_dtype in int8 / uint8; int32 c, or with
    ``dequant`` float32 c = scale_a[i] · scale_b[j] · (a @ b).  k must be a positive multiple
    of 16."""

    m: int
    n: int
    k: int
    a_dtype: DType = int8
    b_dtype: DType = int8
    dequant: bool = False

    def __post_init__(self):
        for name in ("m", "n", "k"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InvalidProblemError(f"IntGemm: {name} must be an int >= 0, got {v!r}")
            if v > _I32:
                raise UnsupportedError(f"IntGemm: {name} = {v} exceeds 2**31 - 1")
        if self.k == 0 or self.k % _V:
            raise UnsupportedError(f"IntGemm: k = {self.k} is not wired; wired: k a positive "
                                   f"multiple of {_V}")
        object.__setattr__(self, "a_dtype", check_dtype(self.a_dtype, INT_DTYPES, "IntGemm a"))
        object.__setattr__(self, "b_dtype", check_dtype(self.b_dtype, INT_DTYPES, "IntGemm b"))
        if not isinstance(self.dequant, bool):
            raise InvalidProblemError(f"IntGemm: dequant must be a bool, got {self.dequant!r}")

    @property
    def out_dtype(self) -> DType:
        return float32 if self.dequant else int32


@dataclass
class IntGemmArgs:
    """a (m, k) row-major, b (k, n) column-major, c (m, n) output (int32, or float32 with
    dequant; any strides), scale_a (m,) or (1,) and scale_b (n,) or (1,) float32 (dequant
    only).  Device views."""

    a: object
    b: object
    c: object
    scale_a: object = None
    scale_b: object = None


def _kmajor_ld(view, rows: int, cols: int, s_rows: int, s_cols: int, name: str, wired: str):
    """Leading dim (bytes) of a k-major operand seen as (rows, k); typed errors otherwise."""
    if not (s_cols == 1 or cols == 1):
        raise UnsupportedError(f"IntGemm: {name} has no unit stride along k; wired: {wired} "
                               f"(make a k-major copy first)")
    ld = s_rows if rows > 1 else align_up(cols, _V)
    if ld < 0 or ld % _V:
        raise MisalignedOperandError(f"IntGemm: {name}'s leading dim {ld} is not a multiple "
                                     f"of {_V}")
    if view.ptr % 16:
        raise MisalignedOperandError(f"IntGemm: {name}'s base pointer is not 16-byte aligned")
    return ld


class IntGemmPlan(Plan):
    """s8 / u8 GEMM on tensor cores: int32 c, or float32 c with per-row / per-column scales.
    See the module docstring for layouts, alignment and the tile heuristic."""

    descriptor = IntGemmDescriptor

    def _plan(self) -> None:
        d = self.desc
        tuning = self.pref.tuning_for(GemmTuning)
        tile = tuning.tile
        if tile is not None and tile not in spec.INT8_TILES:
            raise UnsupportedError(f"IntGemm: tile {tile!r} is not wired; wired: "
                                   f"{', '.join(spec.INT8_TILES)}")
        if tuning.splits not in (None, 1):
            raise UnsupportedError(f"IntGemm: split-K is not wired (GemmTuning.splits = "
                                   f"{tuning.splits}); wired: None, 1")
        if tile is None:
            big = math.ceil(d.m / 128) * math.ceil(d.n / 128)
            tile = "128x128" if big >= BIG_TILE_MIN_CTAS else "64x64"
        self._knobs = spec.Int8Knobs(a=_PTX[d.a_dtype.short], b=_PTX[d.b_dtype.short],
                                     out="f32" if d.dequant else "i32", tile=tile)
        pg = PrecisionGuarantee(math_precision=d.a_dtype, accumulator=int32)
        self._sku = KernelSku(OpCategory.GEMM, "int_gemm", d.a_dtype, self._arch,
                              BackendKind.CUTE_DSL, pg, aux_element=d.out_dtype,
                              template=spec.GEMM_INT8.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self.desc.m == 0 or self.desc.n == 0

    def _bind(self, args):
        """The checked views and leading dims (a, b, c, scale_a, scale_b, lda, ldb)."""
        if not isinstance(args, IntGemmArgs):
            raise InvalidProblemError(f"IntGemmPlan needs IntGemmArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        a = view_arg(args.a, "a", shape=(d.m, d.k), dtype=d.a_dtype)
        b = view_arg(args.b, "b", shape=(d.k, d.n), dtype=d.b_dtype, device=a.device)
        c = view_arg(args.c, "c", shape=(d.m, d.n), dtype=d.out_dtype, device=a.device)
        check_writable_no_overlap(c, "c")
        lda = _kmajor_ld(a, d.m, d.k, a.strides[0], a.strides[1], "a", "row-major a")
        ldb = _kmajor_ld(b, d.n, d.k, b.strides[1], b.strides[0], "b", "column-major b")
        sa = sb = None
        if d.dequant:
            sa = self._scale(args.scale_a, "scale_a", d.m, a.device)
            sb = self._scale(args.scale_b, "scale_b", d.n, a.device)
        elif args.scale_a is not None or args.scale_b is not None:
            raise InvalidProblemError("IntGemm: scales given but dequant is False")
        return a, b, c, sa, sb, lda, ldb

    @staticmethod
    def _scale(obj, name, length, device):
        if obj is None:
            raise InvalidProblemError(f"IntGemm: {name} is required with dequant")
        v = view_arg(obj, name, dtype=float32, device=device)
        if len(v.shape) != 1 or v.shape[0] not in (1, length):
            raise InvalidProblemError(f"IntGemm: {name} must have shape ({length},) or (1,), "
                                      f"got {tuple(v.shape)}")
        return v

    def kernel_for(self, args):
        """(template, knobs) the plan launches for these args (checks them first)."""
        self._bind(args)
        return spec.GEMM_INT8, self._knobs

    def _launch(self, bound, stream: int, ws) -> None:
        a, b, c, sa, sb, lda, ldb = bound
        d = self.desc
        lk = self._kernel(spec.GEMM_INT8, self._knobs, a.device)
        bm, bn = spec.INT8_TILES[self._knobs.tile][:2]
        grid = (math.ceil(d.m / bm) * math.ceil(d.n / bn), 1, 1)
        if sa is not None:
            psa, sas = sa.ptr, (sa.strides[0] if sa.shape[0] > 1 else 0)
            psb, sbs = sb.ptr, (sb.strides[0] if sb.shape[0] > 1 else 0)
        else:
            psa, sas, psb, sbs = c.ptr, 0, c.ptr, 0
        lk.launch(grid, [a.ptr, b.ptr, c.ptr, psa, psb, d.m, d.n, d.k // 4, lda // 4, ldb // 4,
                         c.strides[0], c.strides[1], sas, sbs], stream)
