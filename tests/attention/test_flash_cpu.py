"""Flash attention plans without a GPU: descriptor validation, typed operand errors, the exact
launch arguments (grid, strides, flags) through the ``launches`` fixture, and a cross-compile
sample of the forward kernel for every arch."""

import math

import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.dtypes import bfloat16, float16, float32, int32
from baracuda_dsl.errors import (InvalidProblemError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.ops.attention.checks import check_disjoint
from baracuda_dsl.ops.attention.flash import (FlashAttentionArgs, FlashAttentionDescriptor,
                                              FlashAttentionPlan, FlashTuning)
from baracuda_dsl.ops.attention.specs import flash as spec
from baracuda_dsl.tensor import TensorView

PREF = PlanPreference(arch=ArchSku.SM90A)


def view(ptr, shape, dtype=bfloat16, strides=None):
    if strides is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= max(n, 1)
    return TensorView(ptr, shape, strides, dtype, 0)


def desc(**kw):
    base = dict(batch=2, seqlen_q=100, seqlen_k=130, heads_q=8, heads_k=2, head_dim=128)
    base.update(kw)
    return FlashAttentionDescriptor(**base)


def test_descriptor_validation():
    d = desc(causal=True, window=(16, 4))
    assert d.bounds == (16, 0)
    assert desc(causal=True).bounds == (-1, 0)
    assert math.isclose(d.softmax_scale, 1 / math.sqrt(128))
    assert desc(scale=0.5).softmax_scale == 0.5
    with pytest.raises(UnsupportedError, match="SdpaPlan"):
        desc(dtype="f32")
    with pytest.raises(UnsupportedError, match="SdpaPlan"):
        desc(head_dim=80)
    with pytest.raises(InvalidProblemError):
        desc(heads_k=3)
    with pytest.raises(InvalidProblemError):
        desc(batch=-1)
    with pytest.raises(InvalidProblemError):
        desc(window=(1, 2, 3))
    with pytest.raises(InvalidProblemError):
        desc(window=(-2, 0))
    with pytest.raises(InvalidProblemError):
        desc(align="middle")
    with pytest.raises(InvalidProblemError):
        desc(softcap=-1.0)
    with pytest.raises(InvalidProblemError):
        desc(softcap=float("inf"))
    with pytest.raises(InvalidProblemError):
        desc(alibi="all")
    with pytest.raises(InvalidProblemError):
        desc(dropout_p=1.0)
    with pytest.raises(InvalidProblemError):
        desc(dropout_p=-0.1)
    with pytest.raises(InvalidProblemError):
        desc(total_q=5)
    with pytest.raises(UnsupportedError):
        desc(seqlen_q=2**31)
    with pytest.raises(UnsupportedError):
        desc(heads_q=2**16, heads_k=1)
    with pytest.raises(InvalidProblemError):
        FlashAttentionPlan.select(object(), PREF)


def _args(d, **over):
    q = view(0x100000, d.q_shape())
    k = view(0x200000, d.kv_shape())
    v = view(0x300000, d.kv_shape())
    o = view(0x400000, d.q_shape())
    lse = view(0x500000, d.lse_shape(), float32)
    a = dict(q=q, k=k, v=v, out=o, lse=lse)
    a.update(over)
    return FlashAttentionArgs(**a)


def test_launch_arguments(launches):
    d = desc(causal=True, softcap=30.0, align="top_left")
    plan = FlashAttentionPlan.select(d, PREF)
    assert plan.sku().template == "flash_fwd_sm90"
    plan.run(_args(d))
    (name, knobs, grid, args, _), = launches
    assert name == "flash_fwd_sm90" and knobs == {"dtype": "bf16", "head_dim": 128}
    bm = spec.SM90_TILES[128][0]
    assert grid == ((100 + bm - 1) // bm, 8, 2)
    assert args[:5] == [0x100000, 0x200000, 0x300000, 0x400000, 0x500000]
    assert args[5:8] == [0, 0, 0]
    assert args[8:11] == [100, 130, 4]
    assert args[11:14] == [100 * 8 * 128, 8 * 128, 128]         # q (b, s, h)
    assert args[14:17] == [130 * 2 * 128, 2 * 128, 128]         # k
    assert args[23:25] == [8 * 100, 100]                         # lse (b, h)
    assert math.isclose(args[27], 1 / math.sqrt(128), rel_tol=1e-12)
    assert args[28] == 30.0 and args[29:31] == [-1, 0]
    assert args[31] == spec.SOFTCAP                              # top-left: no BOTTOM_RIGHT
    assert args[32:] == [0, 0, 0]                                # no dropout


def test_dropout_arguments(launches):
    d = desc(dropout_p=0.25)
    plan = FlashAttentionPlan.select(d, PREF)
    assert dict(plan.sku().knobs)["dropout"] is True
    plan.run(_args(d, dropout_seed=2 ** 64 - 1, dropout_offset=12345))
    (name, knobs, grid, args, _), = launches
    assert knobs["dropout"] is True
    assert args[32:] == [-1, 12345, 2 ** 30]                     # seed as signed 64-bit
    for bad in (dict(dropout_seed=-1), dict(dropout_offset=2 ** 62), dict(dropout_seed=1.5)):
        with pytest.raises(InvalidProblemError):
            plan.run(_args(d, **bad))


def test_kernel_choice(launches):
    d = desc()
    assert FlashAttentionPlan.select(d, PlanPreference(arch=ArchSku.SM80)).sku().template == \
        "flash_fwd"
    mma = PlanPreference(arch=ArchSku.SM90A, tuning=(FlashTuning(kernel="mma"),))
    plan = FlashAttentionPlan.select(d, mma)
    assert plan.sku().template == "flash_fwd"
    plan.run(_args(d))
    assert launches[0][2][0] == -(-100 // spec.FWD_TILES[128][0])
    with pytest.raises(UnsupportedError, match="sm90a"):
        FlashAttentionPlan.select(d, PlanPreference(arch=ArchSku.SM89,
                                                    tuning=(FlashTuning(kernel="wgmma"),)))
    with pytest.raises(InvalidProblemError):
        FlashTuning(kernel="fast")


def test_varlen_and_alibi_arguments(launches):
    d = FlashAttentionDescriptor(3, 50, 70, 4, 4, 64, "bf16", varlen=True, total_q=90,
                                 total_k=120, alibi="batch_heads")
    plan = FlashAttentionPlan.select(d, PREF)
    cq = view(0x600000, (4,), int32)
    ck = view(0x600100, (4,), int32)
    sl = view(0x700000, (3, 4), float32)
    plan.run(_args(d, cu_seqlens_q=cq, cu_seqlens_k=ck, alibi_slopes=sl))
    (_, knobs, grid, args, _), = launches
    assert grid[1:] == (4, 3)
    assert args[5:8] == [0x600000, 0x600100, 0x700000]
    assert args[11:14] == [0, 4 * 64, 64]                        # varlen: no batch stride
    assert args[23:25] == [0, 90]                                # lse (Hq, Tq)
    assert args[25:27] == [4, 1]                                 # slopes (b, h)
    assert args[31] == spec.VARLEN | spec.ALIBI | spec.BOTTOM_RIGHT


def test_operand_errors(launches):
    d = desc()
    plan = FlashAttentionPlan.select(d, PREF)
    with pytest.raises(InvalidProblemError):                    # wrong shape
        plan.run(_args(d, q=view(0x100000, (2, 100, 8, 64))))
    with pytest.raises(UnsupportedError):                       # wrong dtype
        plan.run(_args(d, k=view(0x200000, d.kv_shape(), float16)))
    with pytest.raises(UnsupportedError, match="unit stride"):
        plan.run(_args(d, v=view(0x300000, d.kv_shape(), strides=(130 * 256, 256, 128, 2))))
    with pytest.raises(UnsupportedError, match="multiples of 8"):
        plan.run(_args(d, v=view(0x300000, d.kv_shape(), strides=(130 * 2 * 132, 2 * 132, 132,
                                                                   1))))
    with pytest.raises(UnsupportedError, match="16-byte"):
        plan.run(_args(d, q=view(0x100008, d.q_shape())))
    with pytest.raises(InvalidProblemError, match="overlaps"):
        plan.run(_args(d, out=view(0x100000, d.q_shape())))
    with pytest.raises(InvalidProblemError, match="alibi"):
        plan.run(_args(d, alibi_slopes=view(0x700000, (8,), float32)))
    with pytest.raises(InvalidProblemError, match="varlen"):
        plan.run(_args(d, cu_seqlens_q=view(0x700000, (3,), int32)))
    with pytest.raises(WorkspaceTooSmallError):                 # lse=None needs a workspace
        plan.run(_args(d, lse=None))
    assert not launches


def test_empty_problems(launches):
    for d in (desc(batch=0), desc(seqlen_q=0), desc(heads_q=0, heads_k=0)):
        plan = FlashAttentionPlan.select(d, PREF)
        assert plan.is_empty()
        plan.run(_args(d))
    assert not launches
    # no keys: still a launch (the rows are written as 0 with lse -inf)
    d = desc(seqlen_k=0)
    FlashAttentionPlan.select(d, PREF).run(_args(d))
    assert len(launches) == 1


def test_check_disjoint():
    a = view(0x1000, (4, 8))
    check_disjoint(a, "a", [("b", view(0x1000 + 64, (4, 8)))])
    with pytest.raises(InvalidProblemError):
        check_disjoint(a, "a", [("b", view(0x1000 + 62, (4, 8)))])


def test_space():
    from baracuda_dsl.ops import get_template
    for arch in ("sm80", "sm89", "sm90a"):
        skus = list(get_template("flash_fwd").skus(arch))
        assert len(skus) == len(spec.DTYPES) * len(spec.HEAD_DIMS) * 2      # × dropout
        assert len(list(get_template("flash_bwd_pre").skus(arch))) == 10  # never sees P
    for d in spec.HEAD_DIMS:
        assert spec.fwd_smem(d) <= 99 * 1024          # sm89's per-CTA limit
        assert spec.sm90_smem(d) <= 227 * 1024        # sm90's
    assert not list(get_template("flash_fwd_sm90").skus("sm89"))
    assert len(list(get_template("flash_fwd_sm90").skus("sm90a"))) == 20


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    kn = {"dtype": "bf16", "head_dim": 96 if arch is ArchSku.SM89 else 128}
    cubin, meta = compile_sku("flash_fwd", freeze_knobs(kn), arch, timeout=600)
    assert len(cubin) > 1000 and meta["threads"] == spec.FWD_THREADS
    if arch is ArchSku.SM90A:
        cubin, meta = compile_sku("flash_fwd_sm90", freeze_knobs(kn), arch, timeout=600)
        assert len(cubin) > 1000 and meta["threads"] == spec.SM90_THREADS


# ------------------------------------------------------------------------------ backward
def test_backward_paths_and_workspace():
    from baracuda_dsl.ops.attention.flash import (FlashAttentionBackwardDescriptor,
                                                  FlashAttentionBackwardPlan)
    from baracuda_dsl.ops.attention.specs import flash_bwd_sm90 as sm90_bwd

    base = dict(batch=2, seqlen_q=100, seqlen_k=130, heads_q=8, heads_k=2)
    rows = 2 * 8 * 100
    delta = -(-4 * rows // 256) * 256
    for d in (64, 128):
        fast = FlashAttentionBackwardPlan.select(
            FlashAttentionBackwardDescriptor(head_dim=d, **base), PREF)
        assert fast.sku().template == "flash_bwd_sm90"
        assert not fast.precision_guarantee().deterministic
        assert fast.workspace_size() == delta + -(-4 * rows * d // 256) * 256
        det = FlashAttentionBackwardPlan.select(
            FlashAttentionBackwardDescriptor(head_dim=d, deterministic=True, **base), PREF)
        assert det.sku().template == "flash_bwd_dkdv"
        assert det.precision_guarantee().deterministic
        assert det.workspace_size() == delta
    for d in (96, 192, 256):                  # no sm90 backward kernel: the deterministic one
        p = FlashAttentionBackwardPlan.select(
            FlashAttentionBackwardDescriptor(head_dim=d, **base), PREF)
        assert p.sku().template == "flash_bwd_dkdv"
    p80 = FlashAttentionBackwardPlan.select(
        FlashAttentionBackwardDescriptor(head_dim=128, **base), PlanPreference(arch=ArchSku.SM80))
    assert p80.sku().template == "flash_bwd_dkdv"
    from baracuda_dsl.ops import get_template
    assert not list(get_template("flash_bwd_sm90").skus("sm80"))
    assert len(list(get_template("flash_bwd_sm90").skus("sm90a"))) == 8
    for d in sm90_bwd.SM90_BWD_DIMS:
        assert sm90_bwd.sm90_bwd_smem(d) <= 227 * 1024


def test_cross_compile_sm90_backward():
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    kn = freeze_knobs({"dtype": "bf16", "head_dim": 64})
    cubin, meta = compile_sku("flash_bwd_sm90", kn, ArchSku.SM90A, timeout=600)
    assert len(cubin) > 1000 and meta["threads"] == 384
    for arch in (ArchSku.SM80, ArchSku.SM90A):
        cubin, meta = compile_sku("flash_bwd_post", kn, arch, timeout=600)
        assert len(cubin) > 500
