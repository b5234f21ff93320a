"""Template specs of the index-remapping layout kernels: ``pad_remap`` (pad in every mode and roll),
``tri_mask`` (triu / tril) and ``pad_bw`` (the deterministic gradient of pad).

``pad_remap`` / ``tri_mask``: the dense output is viewed as rows × cols (cols = the innermost
collapsed dim, rows = the outer dims decomposed once per row).  Knobs (:class:`RemapKnobs`):

``itemsize``  bytes per copied word (1, 2, 4, 8, 16): opaque, so one SKU serves every dtype of that
              size; the plan widens the word over a unit-stride innermost dim that is
              un-padded or (constant / circular) padded by whole words
``mode``      pad_remap: constant, reflect, replicate, circular (roll = circular), circular1
              (circular when every source coordinate wraps at most once: no remainder);
              tri_mask: triu, tril
``rank``      collapsed rank served (2, 3 or 8; rank-1 problems run as one row)
``wide``      0: Int32 index math (every index and offset < 2^31), 1: Int64
``tile``      ``row``: a CTA covers 1 row × 256·ILP cols (long rows); ``block``: 8·ILP rows × 32
              cols (short rows, e.g. images 200-300 wide)

``pad_bw`` knobs (:class:`PadBwKnobs`): ``dtype`` (f32, f16, bf16, f64), ``mode`` (the four pad
modes) and ``rank`` (2, 4, 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register
from .repeat import dims_params

THREADS = 256
ITEMSIZES = (1, 2, 4, 8, 16)
PAD_MODES = ("constant", "reflect", "replicate", "circular")
KERNEL_PAD_MODES = PAD_MODES + ("circular1",)   # circular1: circular with at most one wrap
TRI_MODES = ("triu", "tril")
RANKS = (2, 3, 8)
TILES = ("row", "block")
BW_RANKS = (2, 4, 8)
BW_DTYPES = tuple(d.short for d in FP4)
BW_THREADS = 256


@dataclass(frozen=True)
class RemapKnobs:
    """One ``pad_remap`` / ``tri_mask`` SKU: word size in bytes, remap mode, collapsed rank
    knob, Int64 index math, CTA tile shape (``row`` / ``block``)."""

    itemsize: int
    mode: str
    rank: int
    wide: int
    tile: str


@dataclass(frozen=True)
class PadBwKnobs:
    """One ``pad_bw`` SKU: element dtype (short name), pad mode, collapsed rank knob."""

    dtype: str
    mode: str
    rank: int


def ilp_for(itemsize: int) -> int:
    """Words per thread: more for small words so enough bytes are in flight."""
    return 8 if itemsize <= 2 else 4


def tile_dims(tile: str, itemsize: int):
    """(rows, cols) of output words one CTA covers."""
    ilp = ilp_for(itemsize)
    if tile == "row":
        return 1, THREADS * ilp
    return (THREADS // 32) * ilp, 32


def rank_for(r: int) -> int:
    return next(k for k in RANKS if k >= max(r, 2))


def bw_rank_for(r: int) -> int:
    return next(k for k in BW_RANKS if k >= max(r, 2))


def _space(modes):
    return lambda: (RemapKnobs(*k) for k in product(ITEMSIZES, modes, RANKS, (0, 1), TILES))


def _bw_space():
    return (PadBwKnobs(*k) for k in product(BW_DTYPES, PAD_MODES, BW_RANKS))


_REMAP_PARAMS = (f"src:ptr dst:ptr nrows:i64 ncb:i64 {dims_params('o')} {dims_params('e')} "
                 f"{dims_params('l')} {dims_params('s')} f0:i64 f1:i64 kd:i64")

def _remap_template(name: str, kernel: str, modes) -> KernelTemplate:
    """Register the remap template ``name`` (kernel module ``kernels/<kernel>.py``) over
    ``modes``: ``pad_remap`` and ``tri_mask`` share the ABI, knobs and geometry."""
    return register(KernelTemplate(
        name=name,
        family="shape",
        module=f"baracuda_dsl.ops.shape.kernels.{kernel}",
        params=params(_REMAP_PARAMS),
        space=_space(modes),
        geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
        knobs=RemapKnobs,
    ))


PAD = _remap_template("pad_remap", "pad", KERNEL_PAD_MODES)
TRI = _remap_template("tri_mask", "tri", TRI_MODES)

PAD_BW = register(KernelTemplate(
    name="pad_bw",
    family="shape",
    module="baracuda_dsl.ops.shape.kernels.pad_bw",
    params=params(f"dy:ptr dx:ptr n:i64 {dims_params('x')} {dims_params('p')} {dims_params('l')} "
                  f"{dims_params('s')}"),
    space=_bw_space,
    geometry=lambda k: LaunchGeometry(threads=BW_THREADS, smem_bytes=0),
    knobs=PadBwKnobs,
))
