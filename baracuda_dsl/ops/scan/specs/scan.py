"""Template specs of the scan family (cumsum, cumprod, cummax, cummin, logcumsumexp, their
backwards) and of stream compaction (nonzero).

``scan`` — ONE kernel parametrised by op (combine function) × dtype × path.  Knobs:

``op``     forward: ``sum`` ``prod`` ``max`` ``min`` ``lse``; backward: ``prod_bw`` (reverse
           affine recurrence, exact with zeros), ``max_bw`` (segmented reverse sum over runs of
           equal indices; serves cummin too), ``lse_bw`` (reverse scaled signed sum)
``dtype``  input dtype (short name); ``odt`` output value dtype (integer/bool sums and
           products write int64 / uint64; everything else the input dtype)
``path``   ``vec``: one CTA per row, 16-byte vector loads/stores (unit axis stride, aligned);
           ``row``: one CTA per row, scalar strided loads (any strides, negative included —
           the plan reverses scans by negating strides); ``col``: one thread per row ("fiber"),
           sequential down the axis with ``COL_ILP`` loads in flight — coalesced when the axis
           is not the fastest-varying dim (``inner > 1``), and the short-row path.

Rows are addressed by up to 7 collapsed outer dims; long axes are split into chunks scanned
reduce-then-scan (phase 1: chunk totals to the workspace, phase 2: carry = ordered combination
of the preceding totals, re-scan) — deterministic for every op.

``compact`` — stream compaction over a dense mask; knob ``isz`` (mask word bytes 1, 2, 4, 8: the
non-zero test ``(word & zmask) != 0`` takes a run-time mask that drops float sign bits, so one
SKU serves every dtype of that size); run-time ``phase``: 0 per-tile counts, 1 scatter of flat
int64 indices or coordinates, 2 copy the total count to a device scalar.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

FLOATS = ("f32", "f16", "bf16", "f64")
SINTS = ("i8", "i16", "i32", "i64")
UINTS = ("u8", "u16", "u32", "u64")
INTS = SINTS + UINTS
FW_OPS = ("sum", "prod", "max", "min", "lse")
BW_OPS = ("prod_bw", "max_bw", "lse_bw")
PATHS = ("vec", "row", "col")
THREADS = 256            # row paths: one CTA of 256 threads per row (chunk)
COL_THREADS = 256        # col path: 256 fibers per CTA
COL_ILP = 8              # col path: loads in flight per thread
ROW_ELEMS_SCALAR = 4     # row path: consecutive elements per thread per tile
ITEMSIZE = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2,
            "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}
TWO_COMPONENT = ("max", "min", "prod_bw", "max_bw", "lse_bw")   # state = (value, aux)


@dataclass(frozen=True)
class ScanKnobs:
    """One ``scan`` SKU: ``op`` (forward or backward combine), input ``dtype``, output ``odt``,
    ``path`` (vec / row / col) and ``vec`` (elements per 16-byte access on the vec path, else
    1)."""

    op: str
    dtype: str
    odt: str
    path: str
    vec: int


@dataclass(frozen=True)
class CompactKnobs:
    """One ``compact`` SKU: ``isz``, the mask word's bytes (1, 2, 4, 8)."""

    isz: int


def acc_out(dtype: str) -> str:
    """Default output dtype of sum / prod: int64 for signed ints and bool, uint64 for unsigned
    ints (array API), the input dtype for floats."""
    if dtype in UINTS:
        return "u64"
    if dtype in SINTS or dtype == "bool":
        return "i64"
    return dtype


def op_dtypes(op: str):
    """(dtype, odt) pairs wired for ``op``."""
    if op in ("sum", "prod"):
        return [(d, d) for d in FLOATS] + [(d, acc_out(d)) for d in INTS + ("bool",)]
    if op in ("max", "min"):
        return [(d, d) for d in FLOATS + INTS + ("bool",)]
    return [(d, d) for d in FLOATS]


def vec_width(dtype: str, odt: str) -> int:
    """Elements per thread per tile of the ``vec`` path: 16 bytes of the wider of in/out."""
    return max(1, 16 // max(ITEMSIZE[dtype], ITEMSIZE[odt]))


def elems_per_thread(k: ScanKnobs) -> int:
    return k.vec if k.path == "vec" else ROW_ELEMS_SCALAR


def tile_elems(k: ScanKnobs) -> int:
    """Elements one CTA scans per tile (row paths) — chunk lengths are multiples of it."""
    return THREADS * elems_per_thread(k)


def _space():
    for op in FW_OPS + BW_OPS:
        for dt, odt in op_dtypes(op):
            for path in PATHS:
                if op in BW_OPS and path == "vec":
                    continue  # backward ops read neighbours: scalar row / col paths
                v = vec_width(dt, odt) if path == "vec" else 1
                yield ScanKnobs(op, dt, odt, path, v)


def _geometry(k: ScanKnobs) -> LaunchGeometry:
    """Row paths: 256 threads, shared memory = two parities × 8 warps × two 8-byte components;
    col path: 256 threads, no shared memory."""
    if k.path == "col":
        return LaunchGeometry(threads=COL_THREADS, smem_bytes=0)
    return LaunchGeometry(threads=THREADS, smem_bytes=2 * 2 * (THREADS // 32) * 8 + 128)


def _dims(prefix: str, n: int = 7) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(n))


#: per operand (a, b, c, o, oi): axis stride then 7 outer strides
_OPERANDS = ("a", "b", "c", "o", "oi")
SCAN_PARAMS = ("pa:ptr pb:ptr pc:ptr po:ptr poi:ptr pw0:ptr pw1:ptr L:i64 F:i64 nchunk:i64 "
               "chunk:i64 phase:i32 flags:i32 pos0:i64 dpos:i64 " + _dims("e") + " " +
               " ".join(f"{p}s:i64 " + _dims(p + "_") for p in _OPERANDS))

SCAN = register(KernelTemplate(
    name="scan",
    family="scan",
    module="baracuda_dsl.ops.scan.kernels.scan",
    params=params(SCAN_PARAMS),
    space=_space,
    geometry=_geometry,
    knobs=ScanKnobs,
))

#: flag bits of the scan kernel
EXCLUSIVE = 1      # store exclusive prefixes at 0..L-1 and the total at L (include_initial)
REVERSE = 2        # vec path: scan the row back to front (logical ℓ = physical L-1-ℓ)

COMPACT_THREADS = 256
COMPACT_ITEMS = 16
COMPACT_TILE = COMPACT_THREADS * COMPACT_ITEMS
COMPACT_ISZ = (1, 2, 4, 8)

COMPACT = register(KernelTemplate(
    name="compact",
    family="scan",
    module="baracuda_dsl.ops.scan.kernels.compact",
    params=params("mask:ptr counts:ptr offs:ptr out:ptr cnt:ptr n:i64 zmask:i64 phase:i32 "
                  "ndim:i32 cap:i64 sd:i64 sk:i64 " + _dims("x", 8)),
    space=lambda: (CompactKnobs(i) for i in COMPACT_ISZ),
    geometry=lambda k: LaunchGeometry(threads=COMPACT_THREADS, smem_bytes=THREADS // 32 * 8 + 64),
    knobs=CompactKnobs,
))
