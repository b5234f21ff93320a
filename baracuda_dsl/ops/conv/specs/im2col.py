"""Template specs of the unfold / fold kernels behind ``Im2ColPlan`` / ``Col2ImBackwardPlan``
(``im2col``) and ``Col2ImPlan`` / ``Im2ColBackwardPlan`` (``col2im``).

One generic kernel per direction serves 1-, 2- and 3-D problems (spatial dims padded in front to
three with size-1 dims, kernel 1, stride 1, padding 0, dilation 1) and any operand strides, so
the SKUs differ only in the element ``dtype`` (f32, f16, bf16, f64): 4 SKUs per template.

``im2col``: one thread per column element of ``cols`` (N, C·K0·K1·K2, L0·L1·L2) — a pure gather,
0 for taps in the padding.  ``col2im``: one thread per image element (N, C, I0, I1, I2), summing
the column entries that map onto it in a fixed order (deterministic, no atomics), accumulation in
f32 (f64 for f64).

Parameter ABI (both templates): ``src:ptr dst:ptr n:i64`` then four groups of eight Int64 —
``e`` = (C, I0, I1, I2, L0, L1, L2, 0), ``k`` = (K0, K1, K2, S0, S1, S2, 0, 0),
``q`` = (P0, P1, P2, D0, D1, D2, 0, 0), ``s`` = image strides over (n, c, d, h, w) then column
strides over (n, row, block).  ``im2col``: src = image, dst = cols; ``col2im``: src = cols,
dst = image.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
DTYPES = ("f32", "f16", "bf16", "f64")
#: Int64 scalars after ``n`` (four groups of eight)
N_SCALARS = 32


@dataclass(frozen=True)
class Im2ColKnobs:
    """One ``im2col`` / ``col2im`` SKU: the element ``dtype`` (short name)."""

    dtype: str


def _space():
    return (Im2ColKnobs(dt) for dt in DTYPES)


def _group(prefix: str) -> str:
    return " ".join(f"{prefix}{i}:i64" for i in range(8))


_PARAMS = ("src:ptr dst:ptr n:i64 " + " ".join(_group(g) for g in ("e", "k", "q", "s")))

IM2COL = register(KernelTemplate(
    name="im2col",
    family="conv",
    module="baracuda_dsl.ops.conv.kernels.im2col",
    params=params(_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=Im2ColKnobs,
))

COL2IM = register(KernelTemplate(
    name="col2im",
    family="conv",
    module="baracuda_dsl.ops.conv.kernels.col2im",
    params=params(_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=Im2ColKnobs,
))
