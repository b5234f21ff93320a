"""Template specs of the interpolation kernels behind ``InterpolatePlan`` (``interp_fw``) and
``InterpolateBackwardPlan`` (``interp_bw``).

One generic kernel per direction serves 1-, 2- and 3-D problems (spatial dims padded in front to
three with size-1 dims), both output memory orders (a run-time channels-last flag) and every
coordinate map of its mode group (run-time flags), so the SKUs differ only in:

``dtype``  element dtype: f32, f16, bf16, f64 (coordinate math and accumulation in f32 for the
           half types and f32, in f64 for f64; nearest's index map always in f32, like torch)
``group``  ``nearest`` (nearest / nearest-exact), ``linear`` (linear / bilinear / trilinear /
           bicubic: 2 or 4 border-clamped taps a dim) or ``aa`` (antialiased bilinear / bicubic:
           normalised separable filter spans); ``area`` is adaptive average pooling, run by the
           pooling family's kernels

``interp_fw``: one thread per output element.  ``interp_bw``: one thread per input element,
gathering in a fixed order the gradients of the outputs whose taps reach it, each weighted by
the forward's exact per-dim weight (deterministic, no atomics, no workspace).

Parameter groups: ``e`` = (N, C, Id, Ih, Iw, Od, Oh, Ow) Int64; per-operand strides over
(n, c, d, h, w) Int64; ``sc`` the per-dim coordinate scales (Float64, d h w); ``fl`` = (sub,
align_corners, channels_last) Int64 where ``sub`` is nearest-exact / bicubic / aa-bicubic.
The backward adds the per-dim candidate-range coefficients ``rs``, ``lo``, ``hi`` (Float64) and
margins ``mg`` (Int64), see ``kernels/interp_common.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
DTYPES = ("f32", "f16", "bf16", "f64")
GROUPS = ("nearest", "linear", "aa")      # area runs the pooling family's adaptive avg pool
#: (kind, size) of the scalar parameter groups after the two pointers and ``n``, in ABI order
#: (the last group, ``dv``: the magic pairs of the thread-index divisors C, E0, E1, E2 and the
#: narrow flag — see ``blocks.image_index.decompose_ncdhw_auto``)
FW_GROUPS = (("i64", 8), ("i64", 5), ("i64", 5), ("f64", 3), ("i64", 3), ("i64", 9))
BW_GROUPS = (("i64", 8), ("i64", 5), ("i64", 5), ("f64", 3), ("i64", 3),
             ("f64", 3), ("f64", 3), ("f64", 3), ("i64", 3), ("i64", 9))
FW_NAMES = ("e", "s0", "s1", "sc", "fl", "dv")
BW_NAMES = ("e", "s0", "s1", "sc", "fl", "rs", "lo", "hi", "mg", "dv")


@dataclass(frozen=True)
class InterpKnobs:
    """One ``interp_fw`` / ``interp_bw`` SKU: element ``dtype`` (short name) and mode ``group``
    (nearest, linear, area, aa)."""

    dtype: str
    group: str


def _space():
    return (InterpKnobs(dt, g) for dt, g in product(DTYPES, GROUPS))


#: outputs one ``interp_fw_runs`` thread computes along the last spatial dim
RUN = 4
#: the ``interp_fw_runs`` groups and their taps per output along a dim (nearest: nearest and
#: nearest-exact; linear: (bi/tri)linear; cubic: bicubic)
RUNS_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}


def _runs_space():
    return (InterpKnobs(dt, g) for dt, g in product(DTYPES, RUNS_TAPS))


def _abi(prefix: str, groups, names) -> str:
    out = []
    for (kind, k), name in zip(groups, names):
        out += [f"{name}{i}:{kind}" for i in range(k)]
    return prefix + " ".join(out)


_FW_PARAMS = _abi("x:ptr y:ptr n:i64 ", FW_GROUPS, FW_NAMES)
_BW_PARAMS = _abi("dy:ptr dx:ptr n:i64 ", BW_GROUPS, BW_NAMES)

INTERP_FW = register(KernelTemplate(
    name="interp_fw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.interp_fw",
    params=params(_FW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=InterpKnobs,
))

INTERP_FW_RUNS = register(KernelTemplate(
    name="interp_fw_runs",
    family="image",
    module="baracuda_dsl.ops.image.kernels.interp_fw_runs",
    params=params(_FW_PARAMS),
    space=_runs_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=InterpKnobs,
))

INTERP_BW_SCATTER = register(KernelTemplate(
    name="interp_bw_scatter",
    family="image",
    module="baracuda_dsl.ops.image.kernels.interp_bw_scatter",
    params=params(_abi("dy:ptr acc:ptr n:i64 ", FW_GROUPS, FW_NAMES)),
    space=_runs_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=InterpKnobs,
))

INTERP_BW = register(KernelTemplate(
    name="interp_bw",
    family="image",
    module="baracuda_dsl.ops.image.kernels.interp_bw",
    params=params(_BW_PARAMS),
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=InterpKnobs,
))
