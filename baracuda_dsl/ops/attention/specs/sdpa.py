"""Template specs of the general scaled-dot-product attention kernels (``ops/attention/sdpa.py``:
``SdpaPlan`` and ``SdpaBackwardPlan``) — the "correct before fast" path for what the flash
kernels do not take: any strides and alignment, f32 / f64, any head dims (``Dv != D`` too) and an
arbitrary boolean or additive mask tensor.

``sdpa_fwd``       one CTA per (query row i, query head h, batch entry b): the row's running
                   (max, Σexp) over its keys, then out[i] = Σ_j p_ij v[j] per feature block
                   (scores recomputed key chunk by key chunk), lse[i].
``sdpa_bwd_dq``    one CTA per (i, h, b): delta_i = dO_i·O_i (stored in the workspace),
                   dq_i = scale·Σ_j dS_ij k_j.
``sdpa_bwd_dkdv``  one CTA per (key j, kv head hk, b): dv_j = Σ_{h in group, i} P_ij dO_i,
                   dk_j = scale·Σ_{h in group, i} dS_ij q_i (fixed order, no atomics).

Knobs: ``dtype`` only (f16, bf16, f32, f64: 4 SKUs per template, 12 per arch).  Everything else
is a run-time parameter: extents (i32), element strides (i64, any sign / value, 0 broadcasts a
mask dim), scale and softcap (f64, converted to the compute type), and the :data:`CAUSAL`,
:data:`BOTTOM_RIGHT`, :data:`SOFTCAP`, mask-kind (:data:`MASK_BOOL`, :data:`MASK_ADD`,
:data:`MASK_F32`) and :data:`WRITE_LSE` flag bits.  The mask pointer is declared with the
input's element type and re-typed in the kernel by the flags (bool bytes, the input dtype, f32),
so the mask kind costs no SKUs; every access is a scalar load, so no alignment beyond the
element size is assumed.  Compute type: f32 for f16 / bf16 / f32, f64 for f64 (lse and the
workspace's delta are in the compute type).

Grids: x = the row (Sq, or Sk for ``sdpa_bwd_dkdv``), y = heads, z = batch, the latter two capped
at 65535 (the kernels loop over y / z by the grid's extent, so larger counts are fine).
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

DTYPES = ("f16", "bf16", "f32", "f64")
#: threads of every sdpa CTA (keys / query rows per chunk, features per block)
THREADS = 128
#: the largest grid y / z extent (the kernels loop past it)
GRID_YZ = 65535

#: run-time flag bits
CAUSAL = 1          # keep j <= i + off
BOTTOM_RIGHT = 2    # off = Sk − Sq (flash-attn); else 0 (torch SDPA's is_causal, "top_left")
SOFTCAP = 4         # s = softcap·tanh(s / softcap) before the mask
MASK_BOOL = 8       # mask bytes: keep where != 0
MASK_ADD = 16       # additive mask of the input dtype
MASK_F32 = 32       # additive mask stored as f32
WRITE_LSE = 64      # forward: write the log-sum-exp (the lse pointer is valid)


@dataclass(frozen=True)
class SdpaKnobs:
    """One sdpa SKU: the element type of q / k / v / out (and of the gradients)."""

    dtype: str


def _space():
    for dt in DTYPES:
        yield SdpaKnobs(dtype=dt)


def compute_bytes(dtype: str) -> int:
    """Bytes of the compute type (f64 for f64, else f32)."""
    return 8 if dtype == "f64" else 4


def _geometry(buffers: int):
    """``buffers`` per-thread chunk arrays plus the (1, warps, 2) reduction buffer, each padded
    to the shared allocator's alignment."""
    def geometry(k: SdpaKnobs) -> LaunchGeometry:
        cb = compute_bytes(k.dtype)
        red = (THREADS // 32) * 2 * cb
        return LaunchGeometry(threads=THREADS,
                              smem_bytes=buffers * (THREADS * cb + 128) + red + 128)
    return geometry


_DIMS = "batch:i32 heads:i32 sq:i32 sk:i32 ratio:i32 d:i32 dv:i32 "
_TAIL = "scale:f64 softcap:f64 flags:i32"


def _strides(*names: str) -> str:
    """``<n>b <n>s <n>h <n>d`` (i64) per 4-d operand name; ``lse`` / ``mask`` are spelled out."""
    out = []
    for n in names:
        if n == "lse":
            out.append("lb:i64 lh:i64 li:i64")
        elif n == "mask":
            out.append("mb:i64 mh:i64 mi:i64 mj:i64")
        else:
            out.append(" ".join(f"{n}{a}:i64" for a in "bshd"))
    return " ".join(out) + " "


SDPA_FWD = register(KernelTemplate(
    name="sdpa_fwd",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.sdpa_fwd",
    params=params("q:ptr k:ptr v:ptr mask:ptr out:ptr lse:ptr " + _DIMS
                  + _strides("q", "k", "v", "mask", "o", "lse") + _TAIL),
    space=_space,
    geometry=_geometry(1),
    knobs=SdpaKnobs,
))

SDPA_BWD_DQ = register(KernelTemplate(
    name="sdpa_bwd_dq",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.sdpa_bwd",
    params=params("q:ptr k:ptr v:ptr out:ptr dout:ptr lse:ptr mask:ptr dq:ptr delta:ptr "
                  + _DIMS + _strides("q", "k", "v", "o", "do", "lse", "mask", "dq") + _TAIL),
    space=_space,
    geometry=_geometry(1),
    knobs=SdpaKnobs,
))

SDPA_BWD_DKDV = register(KernelTemplate(
    name="sdpa_bwd_dkdv",
    family="attention",
    module="baracuda_dsl.ops.attention.kernels.sdpa_bwd_dkdv",
    params=params("q:ptr k:ptr v:ptr dout:ptr lse:ptr delta:ptr mask:ptr dk:ptr dv:ptr "
                  + _DIMS + _strides("q", "k", "v", "do", "lse", "mask", "dk", "dv") + _TAIL),
    space=_space,
    geometry=_geometry(2),
    knobs=SdpaKnobs,
))
