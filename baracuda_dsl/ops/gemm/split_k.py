"""Split-K pieces shared by ``GemmPlan`` and ``Fp8GemmPlan``: the k ranges, the float32 workspace
(splits, m, :func:`workspace_cols` (n)) of partial products, the whole-block split rule of the
wgmma kernel and the ``gemm_splitk_reduce`` launch that finishes
c = act(alpha · Σ_s ws[s] + beta · c + bias), s summed in order (deterministic)."""

from __future__ import annotations

from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...plan import align_up
from .specs import gemm as spec


def split_extent(k: int, splits: int, gran: int) -> int:
    """The k extent of each split but the last: ceil(k / splits) rounded up to ``gran``."""
    return -(-(-(-k // splits)) // gran) * gran


def split_ranges(k: int, splits: int, ks: int):
    """[(k0, k1)] of the splits (the last takes the residue k - (splits-1)·ks)."""
    return [(s * ks, k if s == splits - 1 else (s + 1) * ks) for s in range(splits)]


def workspace_cols(n: int) -> int:
    """Row stride (elements) of the split-K workspace: n rounded up to the 16-byte vector."""
    return -(-n // spec.SPLITK_VEC) * spec.SPLITK_VEC


def workspace_bytes(splits: int, m: int, n: int) -> int:
    """Bytes of the split-K workspace: float32 (splits, m, workspace_cols(n)), 256-byte
    aligned."""
    return align_up(splits * m * workspace_cols(n) * 4)


def whole_block_split(kt: int, want: int, *, user: bool, m: int, n: int, cap, what: str):
    """(S, blocks per split) cutting ``kt`` k blocks into about ``want`` splits of whole blocks
    (every split but the last ceil(kt / want) blocks); (1, kt) when fewer than 2 result.  A
    count the caller forced (``user``) must come out exactly (InvalidProblemError) and its
    workspace must fit ``cap`` (UnsupportedError); a default one falls back to (1, kt)."""
    kps = -(-kt // want)
    S = -(-kt // kps)
    if user and S != want:
        raise InvalidProblemError(f"{what}: k ({kt} blocks) cannot be split {want} ways in "
                                  f"whole blocks on the wgmma kernel")
    if S < 2:
        return 1, kt
    if cap is not None and workspace_bytes(S, m, n) > cap:
        if user:
            raise UnsupportedError(f"{what}: {S} splits need {workspace_bytes(S, m, n)} bytes "
                                   f"of workspace > max_workspace_bytes={cap}")
        return 1, kt
    return S, kps


def check_split_workspace(ws) -> None:
    """The split-K workspace is read in 16-byte vectors: MisalignedOperandError otherwise."""
    if ws.ptr % 16:
        raise MisalignedOperandError(f"workspace: pointer {ws.ptr:#x} is not 16-byte aligned "
                                     f"(split-K reads it in 16-byte vectors)")


def launch_splitk_reduce(plan, knobs: spec.SplitKReduceKnobs, device, ws, c, bias, splits: int,
                         alpha, beta, stream) -> None:
    """``gemm_splitk_reduce`` (``knobs`` kept by ``plan``) over the float32 split-K workspace
    (splits, m, workspace_cols(n)) of ``plan``'s problem: c = act(alpha · Σ_s ws[s] + beta · c
    + bias), s summed in order; ``bias`` = (pointer, stride, has_bias)."""
    d = plan.desc
    wsn = workspace_cols(d.n)
    pbias, bs, hb = bias
    lr = plan._kernel(spec.GEMM_SPLITK_REDUCE, knobs, device)
    lr.launch((spec.splitk_blocks(d.m, wsn), 1, 1),
              [ws.ptr, c.ptr, pbias, d.m, d.n, splits, wsn, c.strides[0], c.strides[1], bs,
               alpha, beta, hb], stream)
