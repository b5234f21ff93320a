"""Template specs for the shape-copy kernels: the strided gather copy behind ``RepeatPlan`` and
``StridedCopyPlan`` (and the array namespace's contiguize / repeat / tile), and the deterministic
tile reduction behind ``RepeatBackwardPlan``.

``strided_copy`` knobs:
``itemsize``  bytes per copied word (1, 2, 4, 8, 16): dtype-agnostic; the plan widens the word
              over a unit-stride innermost dim when aligned (the vectorised path)
``rank``      collapsed rank served (1, 2, 3, 4 plain gather; 8 = generic with the per-dim
              ``mod input extent`` of torch repeat, used when the broadcast form exceeds rank 8)
``wide``      0: Int32 index math (numel and every offset < 2^31), 1: Int64

``repeat_bw`` knobs: ``dtype`` (f32, f16, bf16, f64) and ``rank`` (collapsed kept rank: 1, 2, 4, 8).
"""

from __future__ import annotations

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

ITEMSIZES = (1, 2, 4, 8, 16)
COPY_RANKS = (1, 2, 3, 4, 8)
BW_RANKS = (1, 2, 4, 8)
BW_DTYPES = tuple(d.short for d in FP4)
COPY_THREADS, COPY_ILP = 256, 4
BW_THREADS = 256


def copy_rank_for(r: int) -> int:
    """Smallest rank knob serving a collapsed rank ``r`` (0 → 1)."""
    return next(k for k in COPY_RANKS if k >= max(r, 1))


def bw_rank_for(r: int) -> int:
    return next(k for k in BW_RANKS if k >= max(r, 1))


def _copy_space():
    for isz in ITEMSIZES:
        for r in COPY_RANKS:
            for w in (0, 1):
                yield dict(itemsize=isz, rank=r, wide=w)


def _bw_space():
    for dt in BW_DTYPES:
        for r in BW_RANKS:
            yield dict(dtype=dt, rank=r)


def _dims(prefix: str) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(8))


STRIDED_COPY = register(KernelTemplate(
    name="strided_copy",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.strided_copy",
    params=params(f"src:ptr dst:ptr n:i64 {_dims('o')} {_dims('e')} {_dims('s')} "
                  f"{_dims('d')}"),
    space=_copy_space,
    geometry=lambda k: LaunchGeometry(threads=COPY_THREADS, smem_bytes=0),
))

REPEAT_BW = register(KernelTemplate(
    name="repeat_bw",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.repeat_bw",
    params=params(f"dy:ptr dx:ptr n:i64 {_dims('k')} {_dims('ks')} {_dims('r')} {_dims('rs')}"),
    space=_bw_space,
    geometry=lambda k: LaunchGeometry(threads=BW_THREADS, smem_bytes=0),
))
