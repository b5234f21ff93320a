"""Template spec of the rotary embedding kernel (``ops/attention/rope.py``: RopePlan and
RopeBackwardPlan).

``rope``  one thread per *unit* of a (token, head) row of ``D`` features: rows are
          ``(b, s, h)`` of x (B, S, H, D) (varlen (T, H, D): B = 1, S = T), and a row has
          ``urot`` rotary units then ``upass`` pass-through units (``upass = 0`` when out is
          x: in place).  Knobs (:class:`RopeKnobs`): ``dtype`` of x / out (f16, bf16, f32,
          f64; math in f32, f64 for f64), ``table`` the dtype of the cos / sin tables (f32, or
          x's dtype), ``layout`` ``half`` (GPT-NeoX: feature i pairs with i + r/2) or
          ``interleaved`` (GPT-J: 2i with 2i + 1).  Run-time flags (:data:`BACKWARD`,
          :data:`VEC`, :data:`HAS_STATUS` and the position source in the :data:`POS_SHIFT`
          bits) select the rotation sign, the vector or the scalar path and where positions
          come from, so one SKU serves forward and backward, aligned and misaligned operands.

Units.  Vector path (``VEC``: every pointer 16-byte aligned, every row stride a multiple of
``V = 16 / itemsize``, ``D % V == 0`` and ``half % V == 0`` / ``r % V == 0``; tables aligned to
their vector's bytes): ``half`` — a unit is the pairs ``[uV, uV + V)`` (two 16-byte x vectors,
``V`` table entries); ``interleaved`` — a unit is features ``[uV, uV + V)`` (``V / 2`` pairs);
pass-through units are ``V`` features from ``r``.  Scalar path: a rotary unit is one pair, a
pass-through unit one feature.

Positions (``flags >> POS_SHIFT & 3``): :data:`POS_OFFSET` ``p = s + off`` (``off`` an i64
scalar), :data:`POS_OFFSETS` ``p = s + offs[b]`` (an int32 (B,) device tensor), :data:`POS_IDS32`
/ :data:`POS_IDS64` ``p = ids[b·pb + s·ps]`` (int32 / int64 position ids; the pointer is read as
int32 words, int64 ids as their little-endian word pairs).  A position outside ``[0, stab)`` is
never used to read a table: the row's rotary features are written as NaN, and with
``HAS_STATUS`` the kernel stores 1 into the int32 ``status[0]`` (never clears it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = ("f16", "bf16", "f32", "f64")
LAYOUTS = ("half", "interleaved")
#: table dtypes wired per x dtype: f32, or x's own dtype (f64 x: f64 by default)
TABLES = {"f16": ("f32", "f16"), "bf16": ("f32", "bf16"), "f32": ("f32",),
          "f64": ("f64", "f32")}
ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
THREADS = 128

#: flag bits
BACKWARD = 1       # rotate by the opposite angle (sin negated)
VEC = 2            # 16-byte vector path
HAS_STATUS = 8     # store 1 into status[0] on a position outside the table
POS_SHIFT = 4      # bits 4-5: the position source
POS_OFFSET, POS_OFFSETS, POS_IDS32, POS_IDS64 = 0, 1, 2, 3


@dataclass(frozen=True)
class RopeKnobs:
    """One ``rope`` SKU: x / out dtype, cos / sin table dtype, pair layout."""

    dtype: str
    table: str
    layout: str


def vec_of(dtype: str) -> int:
    """Elements of ``dtype`` in one 16-byte vector."""
    return 16 // ITEMSIZE[dtype]


def table_vec(knobs: RopeKnobs) -> int:
    """Table entries one vector-path unit reads from cos (and from sin)."""
    v = vec_of(knobs.dtype)
    return v if knobs.layout == "half" else v // 2


def table_align(knobs: RopeKnobs) -> int:
    """Byte alignment the vector path needs of the table pointers and row strides."""
    return min(16, table_vec(knobs) * ITEMSIZE[knobs.table])


def _space():
    for dt in DTYPES:
        for tb in TABLES[dt]:
            for lay in LAYOUTS:
                yield RopeKnobs(dtype=dt, table=tb, layout=lay)


ROPE = register(KernelTemplate(
    name="rope",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.rope",
    params=params("x:ptr out:ptr cos:ptr sin:ptr pos:ptr status:ptr flags:i32 total:i64 "
                  "upr:i32 urot:i32 H:i32 S:i32 half:i32 rdim:i32 D:i32 stab:i32 "
                  "xb:i64 xs:i64 xh:i64 ob:i64 os:i64 oh:i64 cs:i64 ss:i64 pb:i64 ps:i64 "
                  "off:i64"),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=RopeKnobs,
))
