"""Template specs for the channel-normalisation family (BatchNorm, GroupNorm, InstanceNorm; FW
and BW).  x is a dense (N, C, S) tensor (S = product of the spatial dims).  Three kernels, each
with a forward (``mode=fw``) and a backward (``mode=bw``) variant:

``channel_norm_partial``   grid (units, K): CTA (u, k) reduces chunk k of reduction unit u (a
                           unit is ``segs`` segments of ``L`` contiguous elements) and writes one
                           partial to the workspace.  fw: (count, mean, M2) from per-thread
                           batch statistics combined with Chan's formula; bw: (Σdy, Σdy·(x−mean)).
``channel_norm_finalize``  one thread per entry (row (n, c) for GroupNorm, channel for BatchNorm):
                           merges its unit's K partials in a fixed order.  fw: saved mean / rstd,
                           running-stat update, per-entry (mean, scale, shift); bw: per-entry
                           dx coefficients and (threads < C) dweight / dbias.
``channel_norm_apply``     element-wise: fw y = (x − mu[e])·a[e] + c[e];
                           bw dx = a[e]·dy − b[e]·(x − mu[e]) − c[e], e = (flat row) mod E.

Knobs: ``dtype`` (element type; math in f32, f64 for f64), ``vec`` (elements per global access:
16 bytes, or 1 for the generic path), ``mode`` (fw | bw) and, for the finalize kernel,
``pdtype`` (dtype of weight / bias / running stats / dweight / dbias: the input dtype, or f32
for half inputs).  No atomics: every reduction order is fixed, so results are bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....common.rows import max_vec
from ....dtypes import FP4
from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = tuple(d.short for d in FP4)
MODES = ("fw", "bw")
PARTIAL_THREADS = 256
FINALIZE_THREADS = 128
APPLY_THREADS = 256
APPLY_UNROLL = 4  # vectors per thread in the apply kernel


def param_dtypes(dtype: str):
    """Allowed dtypes of weight / bias / running stats: the input dtype, or f32 for half inputs."""
    return (dtype, "f32") if dtype in ("f16", "bf16") else (dtype,)


@dataclass(frozen=True)
class ChannelVecKnobs:
    """Knobs of ``channel_norm_partial`` / ``channel_norm_apply``: element type, direction
    (``fw`` | ``bw``) and elements per access (16 bytes, or 1 on the generic path)."""

    dtype: str
    mode: str
    vec: int


@dataclass(frozen=True)
class ChannelFinalizeKnobs:
    """Knobs of ``channel_norm_finalize``: element type, parameter dtype, direction."""

    dtype: str
    pdtype: str
    mode: str


def _vec_space():
    for dt in DTYPES:
        for mode in MODES:
            for vec in (max_vec(dt), 1):
                yield ChannelVecKnobs(dt, mode, vec)


def _finalize_space():
    for dt in DTYPES:
        for pdt in param_dtypes(dt):
            for mode in MODES:
                yield ChannelFinalizeKnobs(dt, pdt, mode)


PARTIAL = register(KernelTemplate(
    name="channel_norm_partial",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.channel_norm",
    params=params("x:ptr dy:ptr mean:ptr part:ptr Lv:i32 nvu:i32 chunk_v:i32 K:i32 ubase:i64 "
                  "segstride:i64 C:i32 G:i32 cpg:i32"),
    space=_vec_space,
    geometry=lambda k: LaunchGeometry(threads=PARTIAL_THREADS,
                                      smem_bytes=(PARTIAL_THREADS // 32) * 4 * 8 + 64),
    knobs=ChannelVecKnobs,
))

FINALIZE = register(KernelTemplate(
    name="channel_norm_finalize",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.channel_norm_finalize",
    params=params("part:ptr w:ptr b:ptr rm:ptr rv:ptr smean:ptr srstd:ptr emu:ptr ea:ptr eb:ptr "
                  "ec:ptr dw:ptr db:ptr E:i32 C:i32 G:i32 cpg:i32 K:i32 Nn:i32 count:f64 eps:f64 "
                  "momentum:f64 flags:i32"),
    space=_finalize_space,
    geometry=lambda k: LaunchGeometry(threads=FINALIZE_THREADS, smem_bytes=0),
    knobs=ChannelFinalizeKnobs,
))

APPLY = register(KernelTemplate(
    name="channel_norm_apply",
    family="normalization",
    module="baracuda_dsl.ops.normalization.kernels.channel_norm_apply",
    params=params("x:ptr dy:ptr out:ptr emu:ptr ea:ptr eb:ptr ec:ptr total_v:i64 Sv:i64 E:i32"),
    space=_vec_space,
    geometry=lambda k: LaunchGeometry(threads=APPLY_THREADS, smem_bytes=0),
    knobs=ChannelVecKnobs,
))

#: flag bits of the finalize kernel
HAS_W, HAS_B, TRAINING, UPDATE_RUNNING, WANT_DW, WANT_DB, ENTRIES = 1, 2, 4, 8, 16, 32, 64
