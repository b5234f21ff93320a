"""CPU tests of the elementwise family: op table consistency, descriptor / plan validation, the
per-call path geometry (flat / s4 / fallback), scalar encoding, in-place hazard detection, and a
cross-compile of representative SKUs for sm80 / sm89 / sm90a (no GPU needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.jit import freeze_knobs
from baracuda_dsl.ops.elementwise import elementwise as ew
from baracuda_dsl.ops.elementwise import families as fam
from baracuda_dsl.ops.elementwise.specs import elementwise as spec
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import ArchSku, PlanPreference

PREF = PlanPreference(arch=ArchSku.SM90A)


# ----------------------------------------------------------------------------- op table
def test_every_op_has_a_formula_and_every_grad_exists():
    pytest.importorskip("cutlass")
    from baracuda_dsl.ops.elementwise.kernels import elementwise_bw, elementwise_ops

    for name, op in spec.OPS.items():
        assert name in elementwise_ops.FORWARD or name in elementwise_bw.BACKWARD, name
        assert set(op.dtypes) <= set(spec.ITEMSIZE), name
        if op.grad is not None:
            g = spec.OPS[op.grad]
            assert g.nout == (2 if name == "where" else op.nin), name
            assert set(g.dtypes) <= set(spec.FLOAT)


def test_standard_elementwise_names_are_ops():
    standard = ("abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_invert "
                "bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor ceil clip conj "
                "copysign cos cosh divide equal exp expm1 floor floor_divide greater "
                "greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 "
                "log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum "
                "multiply negative nextafter not_equal pow real reciprocal remainder round sign "
                "signbit sin sinh square sqrt subtract tan tanh trunc").split()
    missing = [n for n in standard if n not in spec.OPS and n != "positive"]
    assert not missing


def test_sku_space_is_finite_and_paths_declared():
    skus = spec.ELEMENTWISE.skus("sm90a")
    assert len(skus) == len(set(skus)) > 1000
    paths = {dict(k)["path"] for k in skus}
    assert paths == {"flat", "s4", "s8", "v4"}
    assert all(dict(k)["op"] == "copy" for k in skus if dict(k)["path"] == "s8")
    assert all(dict(k)["op"] in spec.V4_OPS and dict(k)["dtype"] in spec.FLOAT
               for k in skus if dict(k)["path"] == "v4")
    # fp8 conversions are not built for sm80
    assert not any("fp8" in str(k) for k in spec.ELEMENTWISE.skus("sm80"))


def test_vec_width_is_16_bytes_of_the_widest_operand():
    K = spec.ElementwiseKnobs
    assert spec.vec_width(K("add", "bf16", "flat")) == 8
    assert spec.vec_width(K("add", "f64", "flat")) == 2
    assert spec.vec_width(K("where", "f32", "flat")) == 4  # bool cond, f32 values
    assert spec.vec_width(K("cast", "u8", "flat", out="c128")) == 1
    assert spec.vec_width(K("equal", "i16", "flat")) == 8


def test_knobs_are_typed_and_keep_the_sku_keys():
    skus = spec.ELEMENTWISE.skus()
    assert all(type(k) is spec.ElementwiseKnobs for k in spec.ELEMENTWISE.space())
    # ``out`` is a knob of the casts only
    assert all(("out" in dict(k)) == (dict(k)["op"] == "cast") for k in skus)
    assert freeze_knobs(spec.ElementwiseKnobs("add", "f32", "s4")) == (
        ("dtype", "f32"), ("op", "add"), ("path", "s4"))


# ------------------------------------------------------------------------ kernel parameters
#: the strided paths' entry parameters, unchanged since the kernel took them one by one
_STRIDED_ABI = ("o0 o1 o2 a b c d n smask fa fb fc fd ga gb gc gd ia ib ic id p0 p1 p2 " +
                " ".join(f"e{i}" for i in range(8)) + " " +
                " ".join(f"{p}{i}" for p in ("so0", "so1", "so2", "sa", "sb", "sc", "sd")
                         for i in range(8))).split()


def test_strided_paths_take_every_slot():
    K = spec.ElementwiseKnobs
    for k in (K("gelu", "f32", "s4"), K("copy", "f16", "s8"), K("where", "bf16", "v4"),
              K("cast", "i8", "s4", out="c64")):
        abi = spec.kernel_params(k)
        assert [p.name for p in abi] == _STRIDED_ABI
        assert spec.ELEMENTWISE.abi(k) == abi
        assert [p.kind for p in abi[:7]] == ["ptr"] * 7 and abi[8].kind == "i32"


def test_flat_path_takes_only_what_it_reads():
    names = lambda k: [p.name for p in spec.kernel_params(k)]  # noqa: E731
    assert names(spec.ElementwiseKnobs("add", "f32", "flat")) == [
        "o0", "a", "b", "n", "smask", "fa", "fb", "ga", "gb", "ia", "ib"]
    assert names(spec.ElementwiseKnobs("softplus", "bf16", "flat")) == [
        "o0", "a", "n", "smask", "fa", "ga", "ia", "p0", "p1"]
    assert names(spec.ElementwiseKnobs("lerp_bw", "f32", "flat"))[:8] == [
        "o0", "o1", "o2", "a", "b", "c", "d", "n"]
    groups = spec.param_groups(spec.ElementwiseKnobs("where", "f64", "flat"))
    assert len(groups) == len(spec.GROUPS) and groups[-2:] == ((), ())


def test_kernel_takes_one_group_per_spec_group():
    import inspect

    pytest.importorskip("cutlass")

    from baracuda_dsl.ops.elementwise.kernels import elementwise as kernel

    for k in (spec.ElementwiseKnobs("add", "f32", "flat"),
              spec.ElementwiseKnobs("add", "f32", "s4")):
        fn, args = kernel.build(k)
        assert tuple(inspect.signature(fn).parameters) == spec.GROUPS + ("stream",)
        for g, a in zip(spec.param_groups(k), args):
            assert (a is None) if not g else (type(a) is kernel.Group and len(a) == len(g))


_KIND = {"ptr": int, "i32": int, "i64": int, "f64": float}


def _launched(launches):
    """(knobs object, argument list) of the last recorded launch."""
    name, knobs, _, args, _ = launches[-1]
    assert name == "elementwise"
    return spec.ElementwiseKnobs(**knobs), args


def _check_packed(knobs, args):
    """``args`` fill the SKU's declared ABI: one value of the right kind per parameter."""
    from baracuda_dsl.abi import ArgPack

    abi = spec.kernel_params(knobs)
    assert len(args) == len(abi), (knobs, len(args), len(abi))
    for p, v in zip(abi, args):
        assert type(v) is _KIND[p.kind], (knobs, p, v)
    ArgPack(abi).set(args)


def test_every_path_packs_its_declared_parameters(launches):
    f32, M, N = bd.float32, 64, 256
    x, y, o = (_tv(a, (M, N), (N, 1)) for a in (0x100000, 0x200000, 0x300000))
    xt = _tv(0x400000, (M, N), (1, M))
    bias = _tv(0x500000, (N,), (1,))
    calls = [
        ("add", ((M, N), (M, N)), [x, y], (), "flat"),
        ("add", ((M, N), None), [x, 2.5], (), "flat"),
        ("softplus", ((M, N),), [x], (1.0, 20.0), "flat"),
        ("add", ((M, N), (N,)), [x, bias], (), "v4"),
        ("softplus", ((M, N),), [xt], (1.0, 20.0), "s4"),
        ("clip", ((M, N), None, None), [xt, -1.0, 1.0], (), "s4"),
    ]
    for op, shapes, ins, params, path in calls:
        p = ew.ElementwisePlan.select(ew.ElementwiseDescriptor(op, shapes, f32, params=params),
                                      PREF)
        p.run(ew.ElementwiseArgs(ins, [o]))
        knobs, args = _launched(launches)
        assert knobs.path == path, (op, knobs)
        _check_packed(knobs, args)
        n_at = knobs.spec.nout + knobs.spec.nin if path == "flat" else 7
        assert args[n_at] == M * N
    # a rank-5 transposed copy: the Int64 s8 path
    shape, perm = (2, 3, 2, 3, 2), (1, 2, 6, 12, 36)
    p = ew.ElementwisePlan.select(ew.ElementwiseDescriptor("copy", (shape,), f32), PREF)
    p.run(ew.ElementwiseArgs([_tv(0x100000, shape, perm)],
                             [_tv(0x200000, shape, (36, 12, 6, 2, 1))]))
    knobs, args = _launched(launches)
    assert knobs.path == "s8"
    _check_packed(knobs, args)
    # the scalar operands: input 1 of add in slot b (flat: 2 slots; s4: 4 slots)
    p = ew.ElementwisePlan.select(ew.ElementwiseDescriptor("add", ((M, N), None), f32), PREF)
    p.run(ew.ElementwiseArgs([x, 2.5], [o]))
    assert _launched(launches)[1][4:11] == [0b10, 0.0, 2.5, 0.0, 0.0, 0, 0]
    p.run(ew.ElementwiseArgs([xt, 2.5], [o]))
    assert _launched(launches)[1][8:21] == [0b10, 0.0, 2.5] + [0.0] * 6 + [0] * 4


def test_backward_plans_pack_their_declared_parameters(launches):
    x, w, dy, dx, dw = (_tv(a, (8, 32), (32, 1)) for a in (0x1000, 0x2000, 0x3000, 0x4000,
                                                            0x5000))
    p = fam.BinaryBackwardPlan.select(fam.ElementwiseBackwardDescriptor(
        "multiply", ((8, 32), (8, 32)), "f32"), PREF)
    p.run(fam.ElementwiseBackwardArgs(dy, [x, w], [dx, dw]))
    knobs, args = _launched(launches)
    assert (knobs.op, knobs.path) == ("multiply_bw", "flat")
    _check_packed(knobs, args)
    assert args[:5] == [dx.ptr, dw.ptr, dy.ptr, x.ptr, w.ptr]


# --------------------------------------------------------------------------- validation
def test_descriptor_errors_are_typed():
    with pytest.raises(UnsupportedError, match="wired"):
        ew.ElementwiseDescriptor("frobnicate", ((3,),))
    with pytest.raises(InvalidProblemError):
        ew.ElementwiseDescriptor("add", ((3,), (-1,)))
    with pytest.raises(InvalidProblemError):
        ew.ElementwiseDescriptor("add", ((1,) * 9, (1,)))
    d = ew.ElementwiseDescriptor("add", ((3, 4), (5,)))
    with pytest.raises(ValueError, match="broadcast"):
        d.out_shape


def test_select_rejects_unwired_dtypes_naming_wired_ones():
    with pytest.raises(UnsupportedError, match="float32"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("sin", ((3,),), "i32"), PREF)
    with pytest.raises(UnsupportedError, match="int32"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("bitwise_and", ((3,), (3,)), "f32"),
                                  PREF)
    with pytest.raises(InvalidProblemError, match="parameters"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("leaky_relu", ((3,),), "f32"), PREF)
    with pytest.raises(InvalidProblemError, match="inputs"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("add", ((3,),), "f32"), PREF)
    with pytest.raises(InvalidProblemError, match="out_dtype"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("cast", ((3,),), "f32"), PREF)
    with pytest.raises(UnsupportedError, match="sm89"):
        ew.ElementwisePlan.select(ew.ElementwiseDescriptor("cast", ((3,),), "f32",
                                                           "float8_e4m3"),
                                  PlanPreference(arch=ArchSku.SM80))


def test_family_plans_restrict_ops():
    with pytest.raises(UnsupportedError, match="UnaryPlan"):
        fam.UnaryPlan.select(ew.ElementwiseDescriptor("add", ((3,), (3,))), PREF)
    p = fam.BinaryCmpPlan.select(ew.ElementwiseDescriptor("less", ((4, 1), (5,)), "i64"), PREF)
    assert p.out_shape == (4, 5) and p.out_dtypes == (bd.bool_,)
    assert p.sku().template == "elementwise"
    with pytest.raises(UnsupportedError, match="backward"):
        fam.ElementwiseBackwardDescriptor("equal", ((3,), (3,)))
    b = fam.BinaryBackwardPlan.select(fam.ElementwiseBackwardDescriptor(
        "multiply", ((4, 5), (5,)), "bf16"), PREF)
    assert b.sku().op == "multiply_bw"


class _Fake:
    """A device-array stand-in with a CUDA array interface (never dereferenced here)."""

    def __init__(self, shape, dtype, ptr=0x10000, strides=None):
        a = np.dtype(dtype)
        st = strides or tuple(int(s) for s in np.empty(shape, a).strides)
        self.__cuda_array_interface__ = dict(shape=tuple(shape), typestr=a.str, data=(ptr, False),
                                             strides=st, version=3)


def test_args_validation_before_any_launch():
    p = ew.ElementwisePlan.select(ew.ElementwiseDescriptor("add", ((4, 5), None), "f32"), PREF)
    ok_in, ok_out = _Fake((4, 5), "f4"), _Fake((4, 5), "f4")
    p.can_implement(ew.ElementwiseArgs([ok_in, 2.0], [ok_out]))
    with pytest.raises(InvalidProblemError, match="scalar"):
        p.can_implement(ew.ElementwiseArgs([ok_in, ok_in], [ok_out]))
    with pytest.raises(InvalidProblemError, match="shape"):
        p.can_implement(ew.ElementwiseArgs([_Fake((5, 4), "f4"), 1.0], [ok_out]))
    with pytest.raises(UnsupportedError, match="dtype"):
        p.can_implement(ew.ElementwiseArgs([_Fake((4, 5), "f8"), 1.0], [ok_out]))
    with pytest.raises(InvalidProblemError, match="broadcast"):
        p.can_implement(ew.ElementwiseArgs([ok_in, 1.0], [_Fake((4, 5), "f4",
                                                                 strides=(0, 4))]))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(ew.ElementwiseArgs([_Fake((4, 5), "f4", ptr=0x10002), 1.0], [ok_out]))
    with pytest.raises(InvalidProblemError, match="outputs"):
        p.can_implement(ew.ElementwiseArgs([ok_in, 1.0], []))


# --------------------------------------------------------------------------- geometry
def _geo(shape, ins, outs, mods=None, vec=4, isz=4):
    mods = mods or tuple(None if s is None else 0 for s in ins) + (0,) * len(outs)
    return ew._geometry(shape, ins, outs, mods, vec, (isz,) * len(ins), (isz,) * len(outs))


def test_flat_path_for_dense_aligned_operands():
    assert _geo((8, 16), ((16, 1), None), ((16, 1),))[0] == "flat"
    # unit dims may carry any stride and still be dense
    assert _geo((8, 1), ((1, 99),), ((1, 1),))[0] == "flat"


def test_misaligned_dense_operand_leaves_the_flat_path():
    path, dims = _geo((8, 16), ((16, 1),), ((16, 1),), mods=(4, 0))
    assert path == "s4" and dims[7] == 128  # collapsed to one dim of 128


def test_broadcast_collapses_to_rank_two():
    path, dims = _geo((4, 6, 5), ((0, 0, 1), (30, 5, 1)), ((30, 5, 1),))
    assert path == "s4"
    assert dims[:8] == (1, 1, 1, 1, 1, 1, 24, 5)
    so0 = dims[8:16]
    sa = dims[8 + 24:16 + 24]
    sb = dims[8 + 32:16 + 32]
    assert so0[-2:] == (5, 1) and sa[-2:] == (0, 1) and sb[-2:] == (5, 1)


def test_v4_for_innermost_unit_or_zero_strides():
    g = ew._geometry
    dense = ((4096, 1),)
    # bias add (M, N) + (N,), bf16: vectors along N, the bias read once per vector
    assert g((64, 4096), ((4096, 1), (0, 1)), dense, (0, 0, 0), 8, (2, 2), (2,), True)[0] == "v4"
    # column broadcast (M, 1) * (M, N): the (M, 1) operand has innermost stride 0
    assert g((64, 4096), ((1, 0), (4096, 1)), dense, (0, 0, 0), 8, (2, 2), (2,), True)[0] == "v4"
    # a misaligned unit-stride operand, a ragged innermost extent, or no v4 SKU: s4
    assert g((64, 4096), ((4096, 1), (0, 1)), dense, (0, 2, 0), 8, (2, 2), (2,), True)[0] == "s4"
    assert g((64, 4095), ((4095, 1), (0, 1)), ((4095, 1),), (0, 0, 0), 8, (2, 2), (2,),
             True)[0] == "s4"
    assert g((64, 4096), ((4096, 1), (0, 1)), dense, (0, 0, 0), 8, (2, 2), (2,), False)[0] == "s4"
    # a transposed operand is never v4
    assert g((64, 64), ((1, 64), (64, 1)), ((64, 1),), (0, 0, 0), 8, (2, 2), (2,),
             True)[0] == "s4"


def test_high_rank_or_huge_problems_fall_back():
    shape = (2, 3, 2, 3, 2)
    perm = (1, 2, 6, 12, 36)  # column-major: no two dims collapse, rank 5 > 4
    dense = (36, 12, 6, 2, 1)
    assert _geo(shape, (perm,), (dense,))[0] is None
    assert _geo((2**31,), ((2,),), ((1,),))[0] is None


def test_broadcast_strides_and_shapes():
    assert ew.broadcast_shapes((4, 1, 3), (5, 1), ()) == (4, 5, 3)
    assert ew.broadcast_strides((5, 1), (1, 1), (4, 5, 3)) == (0, 1, 0)
    with pytest.raises(ValueError):
        ew.broadcast_shapes((2, 3), (3, 2))


def _tv(ptr, shape, strides, dt=bd.float32):
    return TensorView._trusted(ptr, shape, strides, dt, 0, None)


def test_in_place_hazards():
    x = _tv(4096, (4, 4), (4, 1))
    # identical access (x += 1): no hazard
    assert not ew._hazard([x], [x], [x.strides])
    # x = x + x.T: overlap through different strides
    xt = _tv(4096, (4, 4), (1, 4))
    assert ew._hazard([x, xt], [x], [x.strides, xt.strides])
    # shifted overlap (x[1:] = x[:-1] + 1)
    a = _tv(4096, (3, 4), (4, 1))
    b = _tv(4096 + 16, (3, 4), (4, 1))
    assert ew._hazard([a], [b], [a.strides])
    # disjoint buffers
    c = _tv(1 << 20, (4, 4), (4, 1))
    assert not ew._hazard([c], [x], [c.strides])


# --------------------------------------------------------------------------- scalars
def test_scalar_encoding_rounds_to_the_operand_dtype():
    sc = ew.ScalarOperands()
    ew.encode_scalar(0.1, bd.bfloat16, 1, sc)
    assert sc.mask == 2 and sc.f[1] == 0.10009765625
    ew.encode_scalar(0.1, bd.float16, 2, sc)
    assert sc.f[2] == float(np.float16(0.1))
    ew.encode_scalar(2**64 - 1, bd.uint64, 0, sc)
    assert sc.i[0] == -1  # bit pattern of the u64 in an i64 slot
    ew.encode_scalar(1 + 2j, bd.complex64, 3, sc)
    assert (sc.f[3], sc.g[3]) == (1.0, 2.0) and sc.mask == 0b1111
    two = ew.ScalarOperands(2)
    ew.encode_scalar(-3, bd.int64, 1, two)
    assert two.values(2) == [0b10, 0.0, 0.0, 0.0, 0.0, 0, -3]
    assert two.values(4) == [0b10] + [0.0] * 8 + [0, -3, 0, 0]
    with pytest.raises(OverflowError):
        ew.encode_scalar(300, bd.int8, 0, ew.ScalarOperands())
    with pytest.raises(InvalidProblemError):
        ew.encode_scalar(1.5, bd.int32, 0, ew.ScalarOperands())
    assert math.isnan(ew.round_to(float("nan"), bd.bfloat16))
    assert ew.round_to(3.14159, bd.bfloat16) == 3.140625


# ----------------------------------------------------------------------- cross-compile
_K = spec.ElementwiseKnobs
_PICKS = [
    _K("add", "bf16", "flat"),
    _K("gelu_bw", "f32", "s4"),
    _K("where", "c64", "flat"),
    _K("floor_divide", "i32", "s4"),
    _K("copy", "f16", "s8"),
    _K("addcmul", "f32", "v4"),
    _K("softplus", "f16", "flat"),
]


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile_representative_skus(arch):
    """The compiler checks each SKU's declared parameters against its PTX entry: flat SKUs
    take only what they read, the strided ones every slot."""
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit.compiler import compile_sku

    picks = list(_PICKS)
    if arch is not ArchSku.SM80:
        picks.append(_K("cast", "f32", "flat", out="fp8e4m3"))
    for k in picks:
        fk = freeze_knobs(k)
        assert fk in spec.ELEMENTWISE.skus(arch.value)
        cubin, meta = compile_sku("elementwise", fk, arch)
        assert len(cubin) > 0 and meta["threads"] == spec.THREADS
        assert [n for n, _ in meta["params"]] == [p.name for p in spec.kernel_params(k)]
