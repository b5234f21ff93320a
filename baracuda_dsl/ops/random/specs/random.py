"""Template specs of the Philox4x32-10 random kernels (stream definition in
:mod:`baracuda_dsl.blocks.philox`).

``random_fill``: ``y[i] = dist(words of element i)`` for a flat contiguous output of ``n``
elements.  Knobs (:class:`RandomFillKnobs`): ``dist`` × ``dtype`` (the distribution and the
output dtype); parameters
(low/high, mean/std, p, integer range) are run-time scalars.  Each thread turns one Philox block
into 4 (``wpe = 1``) or 2 (``wpe = 2``) consecutive elements per step with one vector store.

``dropout``: ``y[i] = keep(i) ? x[i]·s : 0`` with ``keep(i) = word(i) ≥ thr`` (one word per
element, ``wpe = 1``), optional uint8 ``mask[i] = keep(i)``.  The backward is the same kernel on
(dy, dx) without a mask (it regenerates keep from (seed, offset)).  Knob
(:class:`DropoutKnobs`): ``dtype``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
#: Philox blocks per thread per CTA (independent blocks in flight)
BPT = 2

#: (dist, output dtype) pairs of ``random_fill``
FILL_DTYPES = {
    "uniform": ("f32", "f16", "bf16", "f64"),
    "normal": ("f32", "f16", "bf16", "f64"),
    "gumbel": ("f32", "f16", "bf16", "f64"),
    "bernoulli": ("u8", "f32", "f16", "bf16", "f64"),
    "randint": ("i32", "i64"),
    "bits": ("u32", "u64"),
}
DROPOUT_DTYPES = ("f32", "f16", "bf16", "f64")
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "u8": 1, "i32": 4, "i64": 8, "u32": 4,
            "u64": 8}


@dataclass(frozen=True)
class RandomFillKnobs:
    """One ``random_fill`` SKU: distribution and output dtype (short name; ``u8`` for bool)."""

    dist: str
    dtype: str


@dataclass(frozen=True)
class DropoutKnobs:
    """One ``dropout`` SKU: the element dtype (short name)."""

    dtype: str


def words_per_element(dist: str, dtype: str) -> int:
    """``wpe`` of the stream definition: 2 for 64-bit uniform/normal/gumbel/randint/bits,
    1 otherwise (bernoulli and dropout always use one 32-bit word)."""
    if dist in ("bernoulli",):
        return 1
    return 2 if ITEMSIZE[dtype] == 8 else 1


def blocks_for(n: int, wpe: int) -> int:
    """Philox blocks a draw of ``n`` elements consumes (what a generator advances by)."""
    return (n * wpe + 3) // 4


def _fill_space():
    return (RandomFillKnobs(dist, dt) for dist, dts in FILL_DTYPES.items() for dt in dts)


def _dropout_space():
    return (DropoutKnobs(dt) for dt in DROPOUT_DTYPES)


RANDOM_FILL = register(KernelTemplate(
    name="random_fill",
    family="random",
    module="baracuda_dsl.ops.random.kernels.random_fill",
    params=params("y:ptr n:i64 seed:i64 offset:i64 a:f64 b:f64 ia:i64 ib:i64"),
    space=_fill_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=RandomFillKnobs,
))

DROPOUT = register(KernelTemplate(
    name="dropout",
    family="random",
    module="baracuda_dsl.ops.random.kernels.dropout",
    params=params("x:ptr y:ptr mask:ptr n:i64 seed:i64 offset:i64 thr:i64 scale:f64 "
                  "has_mask:i32"),
    space=_dropout_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=DropoutKnobs,
))
