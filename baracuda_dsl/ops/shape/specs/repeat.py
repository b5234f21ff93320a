"""Template specs for the shape-copy kernels: the strided gather copy behind ``RepeatPlan`` and
``StridedCopyPlan`` (and the array namespace's contiguize / repeat / tile), and the deterministic
tile reduction behind ``RepeatBackwardPlan``.

``strided_copy`` knobs (:class:`CopyKnobs`):
``itemsize``  bytes per copied word (1, 2, 4, 8, 16): dtype-agnostic; the plan widens the word
              over a unit-stride innermost dim when aligned (the vectorised path)
``rank``      collapsed rank served (1, 2, 3, 4 plain gather; 8 = generic with the per-dim
              ``mod input extent`` of torch repeat, used when the broadcast form exceeds rank 8)
``wide``      0: Int32 index math (numel and every offset < 2^31), 1: Int64

``repeat_bw`` knobs (:class:`RepeatBwKnobs`): ``dtype`` (f32, f16, bf16, f64) and ``rank``
(collapsed kept rank: 1, 2, 4, 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

ITEMSIZES = (1, 2, 4, 8, 16)
COPY_RANKS = (1, 2, 3, 4, 8)
BW_RANKS = (1, 2, 4, 8)
BW_DTYPES = tuple(d.short for d in FP4)
COPY_THREADS, COPY_ILP = 256, 4
BW_THREADS = 256


@dataclass(frozen=True)
class CopyKnobs:
    """One ``strided_copy`` SKU: word size in bytes, collapsed rank knob, Int64 index math."""

    itemsize: int
    rank: int
    wide: int


@dataclass(frozen=True)
class RepeatBwKnobs:
    """One ``repeat_bw`` SKU: element dtype (short name) and collapsed kept-rank knob."""

    dtype: str
    rank: int


def copy_rank_for(r: int) -> int:
    """Smallest rank knob serving a collapsed rank ``r`` (0 → 1)."""
    return next(k for k in COPY_RANKS if k >= max(r, 1))


def bw_rank_for(r: int) -> int:
    return next(k for k in BW_RANKS if k >= max(r, 1))


def copy_blocks(n: int) -> int:
    """CTAs of a ``strided_copy`` launch over ``n`` words (``COPY_ILP`` words per thread)."""
    per = COPY_THREADS * COPY_ILP
    return (n + per - 1) // per


def _copy_space():
    return (CopyKnobs(*k) for k in product(ITEMSIZES, COPY_RANKS, (0, 1)))


def _bw_space():
    return (RepeatBwKnobs(*k) for k in product(BW_DTYPES, BW_RANKS))


def dims_params(prefix: str, k: int = 8) -> str:
    """``k`` Int64 ABI parameters ``<prefix>0 .. <prefix>{k-1}`` (one per dim of a group)."""
    return " ".join(f"{prefix}{i}:i64" for i in range(k))


STRIDED_COPY = register(KernelTemplate(
    name="strided_copy",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.strided_copy",
    params=params(f"src:ptr dst:ptr n:i64 {dims_params('o')} {dims_params('e')} "
                  f"{dims_params('s')} {dims_params('d')}"),
    space=_copy_space,
    geometry=lambda k: LaunchGeometry(threads=COPY_THREADS, smem_bytes=0),
    knobs=CopyKnobs,
))

REPEAT_BW = register(KernelTemplate(
    name="repeat_bw",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.repeat_bw",
    params=params(f"dy:ptr dx:ptr n:i64 {dims_params('k')} {dims_params('ks')} "
                  f"{dims_params('r')} {dims_params('rs')}"),
    space=_bw_space,
    geometry=lambda k: LaunchGeometry(threads=BW_THREADS, smem_bytes=0),
    knobs=RepeatBwKnobs,
))
