"""Layout family (permute / contiguize / concat / flip / fill / write-slice) without a GPU:
descriptor validation, the kernel choice per stride pattern, numpy emulation of the tiled
transpose, the strided-destination copy and the fill kernel index math, SKU space sizes, and
cross-compiling samples for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
import baracuda_dsl.ops.shape.specs.layout as lspec
from baracuda_dsl.ops.shape.layout import (ConcatBackwardPlan, ConcatDescriptor, ConcatPlan,
                                           ContiguizeDescriptor, ContiguizePlan, FillDescriptor,
                                           FillPlan, FlipBackwardPlan, FlipDescriptor, FlipPlan,
                                           PermuteBackwardPlan, PermuteDescriptor, PermutePlan,
                                           WriteSliceArgs, WriteSliceDescriptor, WriteSlicePlan,
                                           _memset_kind, check_disjoint, check_no_self_overlap,
                                           copy_kernel_for, encode_fill_value, fill_geometry,
                                           transpose_geometry)
from baracuda_dsl.ops.shape.repeat import strided_copy_geometry
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.tensor import TensorView, contiguous_strides

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ---------------------------------------------------------------------------- validation
def test_validation():
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((2, 3), (0, 0))
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((2, 3), (0, 1, 2))
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((2, 3), (0, 2))
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((2, 3), (0, True))
    assert PermuteDescriptor((2, 3, 4), (-1, 0, 1)).perm == (2, 0, 1)
    assert PermuteDescriptor((2, 3, 4), (2, 0, 1)).out_shape == (4, 2, 3)
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((1,) * 9, tuple(range(9)))
    with pytest.raises(bd.InvalidProblemError):
        PermuteDescriptor((2, -3), (1, 0))
    with pytest.raises(bd.InvalidProblemError):
        ConcatDescriptor(((2, 3), (2, 4)), axis=0)
    with pytest.raises(bd.InvalidProblemError):
        ConcatDescriptor(((2, 3), (2, 3, 1)), axis=0)
    with pytest.raises(bd.InvalidProblemError):
        ConcatDescriptor(((2, 3), (2, 3)), axis=2)
    with pytest.raises(bd.InvalidProblemError):
        ConcatDescriptor((), axis=0)
    with pytest.raises(bd.InvalidProblemError):
        ConcatDescriptor(((), ()), axis=0)
    c = ConcatDescriptor(((2, 3), (2, 0), (2, 4)), axis=-1, dtype="bf16")
    assert c.axis == 1 and c.out_shape == (2, 7) and c.offsets == (0, 3, 3)
    with pytest.raises(bd.InvalidProblemError):
        FlipDescriptor((2, 3), (0, 0))
    with pytest.raises(bd.InvalidProblemError):
        FlipDescriptor((2, 3), (2,))
    assert FlipDescriptor((2, 3)).axes == (0, 1)
    assert FlipDescriptor((2, 3), (-1,)).axes == (1,)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "uint8", 300)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "int8", -129)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "int32", 1.5)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "bool", 2)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "f32", 1 + 1j)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "f16", 1e6)
    with pytest.raises(bd.InvalidProblemError):
        FillDescriptor((4,), "f32", "1")
    with pytest.raises(bd.UnsupportedError):
        PermuteDescriptor((2,), (0,), "not-a-dtype")
    with pytest.raises(bd.InvalidProblemError):
        WriteSliceDescriptor((1,) * 9)


def test_fill_encoding():
    assert encode_fill_value(255, bd.uint8) == b"\xff"
    assert encode_fill_value(-1, bd.int16) == b"\xff\xff"
    assert encode_fill_value(True, bd.bool_) == b"\x01"
    assert encode_fill_value(2.0, bd.int32) == (2).to_bytes(4, "little")
    assert encode_fill_value(1.5, bd.float32) == np.float32(1.5).tobytes()
    assert encode_fill_value(float("nan"), bd.float64) == np.float64("nan").tobytes()
    assert encode_fill_value(1 + 2j, bd.complex64) == np.complex64(1 + 2j).tobytes()
    assert encode_fill_value(1.0, bd.bfloat16) == b"\x80\x3f"
    assert encode_fill_value(-2**63, bd.int64) == (2**63).to_bytes(8, "little")
    assert _memset_kind(b"\x00" * 16) == (1, 0)
    assert _memset_kind(b"\x80\x3f") == (2, 0x3f80)
    assert _memset_kind(np.float32(1.5).tobytes()) == (4, int.from_bytes(np.float32(1.5).tobytes(), "little"))
    assert _memset_kind(np.float64(1.5).tobytes()) is None


def _view(shape, strides, dtype=bd.float32, ptr=1 << 20):
    return TensorView(ptr, shape, strides, dtype, device=0)


def test_overlap_checks():
    check_no_self_overlap(_view((3, 4), (8, 2)), "o")       # y[:, ::2]
    check_no_self_overlap(_view((3, 4), (1, 3)), "o")       # transposed dense
    check_no_self_overlap(_view((1, 4), (0, 1)), "o")       # stride 0 over extent 1 is fine
    with pytest.raises(bd.InvalidProblemError):
        check_no_self_overlap(_view((3, 4), (0, 1)), "o")
    with pytest.raises(bd.InvalidProblemError):
        check_no_self_overlap(_view((3, 4), (2, 1)), "o")   # rows overlap
    a = _view((4,), (1,), ptr=1 << 20)
    b = _view((4,), (1,), ptr=(1 << 20) + 16)
    check_disjoint(a, b, "w")
    with pytest.raises(bd.InvalidProblemError):
        check_disjoint(a, _view((4,), (1,), ptr=(1 << 20) + 12), "w")


def test_plans_select_and_sku():
    p = PermutePlan.select(PermuteDescriptor((16384, 16384), (1, 0), "f32"), PREF)
    assert p.sku().template == "transpose" and dict(p.sku().knobs) == dict(itemsize=4, batch=0)
    assert p.precision_guarantee().deterministic and p.workspace_size() == 0
    p = PermutePlan.select(PermuteDescriptor((64, 256, 56, 56), (0, 2, 3, 1), "bf16"), PREF)
    assert p.sku().template == "transpose" and dict(p.sku().knobs)["batch"] == 1
    q = PermuteBackwardPlan.select(PermuteDescriptor((64, 256, 56, 56), (0, 2, 3, 1), "bf16"),
                                   PREF)
    assert q.sku().template == "transpose" and q._out_shape == (64, 256, 56, 56)
    # permute that keeps the innermost dim: plain (widened) strided copy
    p = PermutePlan.select(PermuteDescriptor((8, 16, 32), (1, 0, 2), "f32"), PREF)
    assert p.sku().template == "strided_copy"
    assert PermutePlan.select(PermuteDescriptor((0, 5), (1, 0)), PREF).is_empty()
    assert ContiguizePlan.select(ContiguizeDescriptor((5, 7), "c128"), PREF).sku().template == \
        "strided_copy"
    cp = ConcatPlan.select(ConcatDescriptor(((4096, 4096),) * 4, 1, "f32"), PREF)
    assert cp.sku().template == "strided_copy" and dict(cp.sku().knobs)["itemsize"] == 16
    ConcatBackwardPlan.select(ConcatDescriptor(((0, 3), (0, 3)), 0, "f32"), PREF)
    assert FlipPlan.select(FlipDescriptor((3, 5), None, "int8"), PREF).sku().template == \
        "strided_copy"
    FlipBackwardPlan.select(FlipDescriptor((3, 5), (1,), "int8"), PREF)
    f = FillPlan.select(FillDescriptor((4, 5), "c128", 1 + 2j), PREF)
    assert f.sku().template == "fill" and dict(f.sku().knobs)["itemsize"] == 8
    w = WriteSlicePlan.select(WriteSliceDescriptor((5, 7), "bool"), PREF)
    assert w.sku().template == "strided_copy"
    for dt in ("bool", "int8", "uint64", "f16", "bf16", "float8_e4m3", "complex128"):
        PermutePlan.select(PermuteDescriptor((3, 4), (1, 0), dt), PREF)


def test_host_arrays_rejected_before_launch():
    p = WriteSlicePlan.select(WriteSliceDescriptor((4,), "f32"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(WriteSliceArgs(np.zeros(4, np.float32), np.zeros(4, np.float32)))


# ------------------------------------------------------------------------ kernel choice
def test_kernel_choice():
    cs = contiguous_strides
    # 2-D transpose
    assert copy_kernel_for((4096, 4096), (1, 4096), cs((4096, 4096)), 4)[0] == "transpose"
    # plain dense copy / row slices → strided copy
    assert copy_kernel_for((64, 64), (64, 1), (64, 1), 4)[0] == "strided_copy"
    assert copy_kernel_for((64, 64), (128, 1), (64, 1), 4)[0] == "strided_copy"
    # no unit-stride source dim → strided copy
    assert copy_kernel_for((64, 64), (2, 256), cs((64, 64)), 4)[0] == "strided_copy"
    # unit dim reversed (flip of a transpose) → strided copy
    assert copy_kernel_for((64, 64), (-1, 64), cs((64, 64)), 4)[0] == "strided_copy"
    # thin matrices → strided copy
    assert copy_kernel_for((4, 4096), (1, 4), cs((4, 4096)), 4)[0] == "strided_copy"
    # NCHW → NHWC (0,2,3,1) and NHWC → NCHW (0,3,1,2)
    n, c, h, w = 8, 64, 14, 14
    nchw = cs((n, c, h, w))
    assert copy_kernel_for((n, h, w, c), (nchw[0], nchw[2], nchw[3], nchw[1]),
                           cs((n, h, w, c)), 2)[0] == "transpose"
    nhwc = cs((n, h, w, c))
    assert copy_kernel_for((n, c, h, w), (nhwc[0], nhwc[3], nhwc[1], nhwc[2]),
                           cs((n, c, h, w)), 2)[0] == "transpose"
    # 6 non-mergeable dims = 4 batch dims + A + B still fine; 7 → strided copy
    shp = (3, 5, 3, 5, 3, 16, 16)
    st = list(cs(shp))
    st[-1], st[-2] = st[-2], st[-1]
    st7 = (1000003, 100003, 10003, 1003, 103) + (1, 16)
    assert transpose_geometry(shp, st7, cs(shp), 4) is None
    assert transpose_geometry(shp[1:], st7[1:], cs(shp[1:]), 4) is not None
    # strided destination (transposed write into a slice)
    g = transpose_geometry((40, 50), (1, 40), (100, 1), 4)
    assert g is not None and g.scalars[:4] == (40, 50, 40, 100)


# ------------------------------------------------------------------ transpose emulation
def _emulate_transpose(g, isz, src_words, src_base, dst_words, dst_base):
    """Run the transpose kernel's block / thread index math in numpy (every block, every
    thread, both phases); records every address touched to check bounds and coverage."""
    na, nb, sb, da, ta, tb = g.scalars[:6]
    bext, bsrc, bdst = g.scalars[6:10], g.scalars[10:14], g.scalars[14:18]
    t = lspec.tile_for(isz)
    ty_n = lspec.TRANSPOSE_THREADS // t
    tx, ty = np.meshgrid(np.arange(t), np.arange(ty_n), indexing="xy")
    tx, ty = tx.ravel(), ty.ravel()
    written = np.zeros(dst_words.size, np.int64)
    for bid in range(g.grid):
        rem = bid
        t_b = rem % tb
        rem //= tb
        t_a = rem % ta
        rem //= ta
        soff = doff = 0
        nbk = g.knobs.batch
        if nbk:
            assert all(e == 1 for e in bext[:4 - nbk])
            for k in range(3, 4 - nbk - 1, -1):
                c = rem % bext[k] if k > 4 - nbk else rem
                soff += c * bsrc[k]
                doff += c * bdst[k]
                rem //= bext[k]
            assert rem == 0
        else:
            assert rem == 0
        a0, b0 = t_a * t, t_b * t
        la, lb = min(na - a0, t), min(nb - b0, t)
        tile = np.zeros((t, t + lspec.pad_for(isz)), src_words.dtype)
        for r in range(t // ty_n):
            bl = ty + r * ty_n
            m = (tx < la) & (bl < lb)
            idx = src_base + soff + a0 + b0 * sb + tx[m] + bl[m] * sb
            assert idx.min(initial=0) >= 0 and idx.max(initial=0) < src_words.size
            tile[bl[m], tx[m]] = src_words[idx]
        for r in range(t // ty_n):
            al = ty + r * ty_n
            m = (al < la) & (tx < lb)
            idx = dst_base + doff + a0 * da + b0 + al[m] * da + tx[m]
            assert idx.min(initial=0) >= 0 and idx.max(initial=0) < dst_words.size
            dst_words[idx] = tile[tx[m], al[m]]
            written[idx] += 1
    return written


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.int64, np.complex128])
@pytest.mark.parametrize("shape,perm", [((33, 70), (1, 0)), ((7, 65, 40), (0, 2, 1)),
                                        ((3, 9, 5, 33), (0, 2, 3, 1)),
                                        ((2, 33, 3, 10), (0, 3, 1, 2)),
                                        ((2, 3, 2, 3, 9, 40), (0, 1, 2, 3, 5, 4)),
                                        ((3, 4, 33, 9), (1, 0, 3, 2)),
                                        ((3, 4, 5, 9, 10), (1, 0, 2, 4, 3))])
def test_transpose_emulated(dtype, shape, perm):
    rng = np.random.default_rng(0)
    isz = np.dtype(dtype).itemsize
    x = (rng.integers(1, 120, size=shape)).astype(dtype)
    src = np.transpose(x, perm)                      # strided view of x
    ref = np.ascontiguousarray(src)
    sst = tuple(s // isz for s in src.strides)
    g = transpose_geometry(src.shape, sst, contiguous_strides(src.shape), isz)
    assert g is not None
    nb = len(g.scalars) and sum(e > 1 for e in g.scalars[6:10])
    assert g.knobs.batch == lspec.transpose_batch_for(nb)
    dst = np.zeros(ref.size, dtype)
    written = _emulate_transpose(g, isz, x.reshape(-1), 0, dst, 0)
    assert (written == 1).all()
    np.testing.assert_array_equal(dst.reshape(ref.shape), ref)


def test_transpose_emulated_strided_dst():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1000, size=(37, 45)).astype(np.int32)
    y = np.full((80, 100), -1, np.int32)
    dview = y[3:48, 5:42]                             # dst is a slice, src is x.T
    src = x.T
    g = transpose_geometry(src.shape, (1, 45), (100, 1), 4)
    assert g is not None
    flat = y.reshape(-1)
    written = _emulate_transpose(g, 4, x.reshape(-1), 0, flat, 3 * 100 + 5)
    np.testing.assert_array_equal(dview, src)
    assert written.sum() == src.size
    assert (y[:3] == -1).all() and (y[48:] == -1).all() and (y[:, :5] == -1).all()


# ------------------------------------------------------------ strided-dst copy emulation
def _emulate_copy(g, src_words, sbase, dst_words, dbase):
    o, s, d = g.dims[0:8], g.dims[16:24], g.dims[24:32]
    r = g.knobs.rank
    assert all(x == 1 for x in o[:8 - r])
    idx = np.arange(g.n)
    coords = np.unravel_index(idx, o[8 - r:]) if g.n else [idx] * r
    so = np.full(g.n, sbase, np.int64)
    do = np.full(g.n, dbase, np.int64)
    for k in range(r):
        so += coords[k] * s[8 - r + k]
        do += coords[k] * d[8 - r + k]
    assert len(np.unique(do)) == g.n
    dst_words[do] = src_words[so]


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.complex128])
def test_strided_dst_copy_emulated(dtype):
    rng = np.random.default_rng(2)
    isz = np.dtype(dtype).itemsize
    for ysl, xshape_fn in [((slice(2, 5), slice(None, None, 2)), None),
                           ((slice(None), slice(8, 40)), None),
                           ((slice(None, None, -1), slice(4, 36)), None),
                           ((slice(1, 9), slice(None)), "bcast")]:
        y = np.zeros((12, 48), dtype)
        dview = y[ysl]
        x = rng.integers(1, 100, size=dview.shape).astype(dtype)
        if xshape_fn == "bcast":
            x = np.broadcast_to(x[:1], dview.shape)
        xs = tuple(st // isz for st in x.strides)
        ds = tuple(st // isz for st in dview.strides)
        doff = (dview.__array_interface__["data"][0] - y.__array_interface__["data"][0]) // isz
        g = strided_copy_geometry(dview.shape, xs, ds, isz, 0, (doff * isz) % 16)
        w = g.width
        ywords = y.reshape(-1).view(np.dtype(f"V{w}")) if w != isz else y.reshape(-1)
        base_x = x
        while base_x.base is not None and isinstance(base_x.base, np.ndarray):
            base_x = base_x.base
        xflat = np.ascontiguousarray(x).reshape(-1) if xshape_fn != "bcast" else x[:1].reshape(-1)
        if xshape_fn != "bcast":
            g = strided_copy_geometry(dview.shape, contiguous_strides(dview.shape), ds, isz, 0,
                                      (doff * isz) % 16)
            w = g.width
            ywords = y.reshape(-1).view(np.dtype(f"V{w}")) if w != isz else y.reshape(-1)
        xwords = xflat.view(np.dtype(f"V{w}")) if w != isz else xflat
        _emulate_copy(g, xwords, 0, ywords, doff * isz // w)
        np.testing.assert_array_equal(y[ysl], x)
        mask = np.ones(y.shape, bool)
        mask[ysl] = False
        assert (y[mask] == 0).all()


def test_strided_copy_widening_both_sides():
    # dst rows of 32 f16 at a 16-byte aligned start, src dense → 16-byte words
    g = strided_copy_geometry((4, 32), (32, 1), (64, 1), 2, 0, 0)
    assert g.width == 16 and g.knobs.rank == 2
    # dst start misaligned by one element → no widening
    assert strided_copy_geometry((4, 32), (32, 1), (64, 1), 2, 0, 2).width == 2
    # dst row pitch not a multiple of the word → narrower word
    assert strided_copy_geometry((4, 32), (32, 1), (36, 1), 2, 0, 0).width == 8


# ----------------------------------------------------------------------- fill emulation
@pytest.mark.parametrize("dtype,value", [(np.uint8, 7), (np.float32, 1.5), (np.complex128, 1 + 2j),
                                         (np.int64, -3), (np.float16, 0.25)])
def test_fill_emulated(dtype, value):
    y = np.zeros((9, 20), dtype)
    for sl in [(slice(None), slice(None)), (slice(1, 8, 3), slice(None, None, -2)),
               (slice(None), slice(3, 4))]:
        y[...] = 0
        v = y[sl]
        isz = y.itemsize
        knobs, n, odd, dims = fill_geometry(v.shape, tuple(s // isz for s in v.strides), isz)
        o, d = dims[:8], dims[8:]
        r = knobs.rank
        wsz = knobs.itemsize
        pat = encode_fill_value(value, as_dtype(np.dtype(dtype)))
        words = np.frombuffer(pat, np.dtype(f"u{wsz}"))
        flat = y.reshape(-1).view(np.dtype(f"u{wsz}"))
        base = (v.__array_interface__["data"][0] - y.__array_interface__["data"][0]) // wsz
        idx = np.arange(n)
        coords = np.unravel_index(idx, o[8 - r:])
        off = np.full(n, base, np.int64)
        for k in range(r):
            off += coords[k] * d[8 - r + k]
        flat[off] = np.where(idx & odd, words[-1], words[0])
        np.testing.assert_array_equal(y[sl], np.full(v.shape, value, dtype))
        mask = np.ones(y.shape, bool)
        mask[sl] = False
        assert (y[mask] == 0).all()


# ----------------------------------------------------------------------------- SKU space
def test_sku_space():
    from baracuda_dsl.ops import get_template

    tr = get_template("transpose").skus()
    fill = get_template("fill").skus()
    assert len(tr) == 5 * 4 and len(fill) == 4 * 4 * 2
    assert len(get_template("strided_copy").skus()) == 5 * 5 * 2
    for shape, perm in [((4, 6), (1, 0)), ((2, 3, 40, 50), (0, 2, 3, 1)), ((5,), (0,))]:
        for dt in ("bool", "bf16", "f32", "f64", "c128"):
            s = PermutePlan.select(PermuteDescriptor(shape, perm, dt), PREF).sku()
            space = tr if s.template == "transpose" else get_template("strided_copy").skus()
            assert s.knobs in space
    s = FillPlan.select(FillDescriptor((3, 4), "c64", 2j), PREF).sku()
    assert s.knobs in fill
    for prod_ in itertools.product([(33, 70)], ["int8", "f32"]):
        shape, dt = prod_
        s = ContiguizePlan.select(ContiguizeDescriptor(shape, dt), PREF).sku()
        assert s.knobs in get_template("strided_copy").skus()


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("transpose", dict(itemsize=2, batch=4)),
                        ("transpose", dict(itemsize=16, batch=0)),
                        ("fill", dict(itemsize=8, rank=2, wide=0)),
                        ("strided_copy", dict(itemsize=4, rank=3, wide=1))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256


def test_plan_checks_with_fake_views():
    """Args checks that raise before any launch, and the per-launch kernel choice, on fake
    device views (no GPU needed)."""
    from baracuda_dsl.ops.shape.layout import ConcatArgs, FillArgs, PermuteArgs

    base = 1 << 30
    w = WriteSlicePlan.select(WriteSliceDescriptor((50, 60), "f32"), PREF)
    src_t = TensorView(base, (50, 60), (1, 50), bd.float32)               # x.T of a (60, 50)
    dst = TensorView(base + 2**20, (50, 60), (100, 1), bd.float32)         # y[:50, :60]
    assert w.kernels_for(WriteSliceArgs(src_t, dst)) == ("transpose",)
    dense = TensorView(base, (50, 60), (60, 1), bd.float32)
    assert w.kernels_for(WriteSliceArgs(dense, dst)) == ("strided_copy",)
    with pytest.raises(bd.InvalidProblemError):                            # overlapping memory
        w.run(WriteSliceArgs(dense, TensorView(base + 400, (50, 60), (100, 1), bd.float32)))
    with pytest.raises(bd.InvalidProblemError):                            # zero-stride dst
        w.run(WriteSliceArgs(dense, TensorView(base + 2**20, (50, 60), (0, 1), bd.float32)))
    with pytest.raises(bd.InvalidProblemError):                            # wrong shape
        w.run(WriteSliceArgs(dense, TensorView(base + 2**20, (60, 50), (50, 1), bd.float32)))
    p = PermutePlan.select(PermuteDescriptor((60, 50), (1, 0), "f32"), PREF)
    with pytest.raises(bd.UnsupportedError):                               # strided permute out
        p.run(PermuteArgs(TensorView(base, (60, 50), (50, 1), bd.float32), dst))
    with pytest.raises(bd.UnsupportedError):                               # dtype mismatch
        p.run(PermuteArgs(TensorView(base, (60, 50), (50, 1), bd.float16),
                          TensorView(base + 2**20, (50, 60), (60, 1), bd.float16)))
    c = ConcatPlan.select(ConcatDescriptor(((4, 8), (4, 0), (4, 3)), 1, "f32"), PREF)
    xs = [TensorView(base + i * 4096, s, contiguous_strides(s), bd.float32)
          for i, s in enumerate(((4, 8), (4, 0), (4, 3)))]
    out = TensorView(base + 2**20, (4, 11), (11, 1), bd.float32)
    assert c.kernels_for(ConcatArgs(xs, out)) == ("strided_copy", "strided_copy")
    with pytest.raises(bd.InvalidProblemError):
        c.run(ConcatArgs(xs[:2], out))
    f = FillPlan.select(FillDescriptor((4, 4), "f32", 1.0), PREF)
    with pytest.raises(bd.InvalidProblemError):
        f.run(FillArgs(TensorView(base, (4, 4), (1, 1), bd.float32)))     # self-overlap
    assert f.uses_memset(FillArgs(TensorView(base, (4, 4), (4, 1), bd.float32)))
    assert not f.uses_memset(FillArgs(TensorView(base, (4, 4), (8, 1), bd.float32)))


def test_transpose_fallbacks():
    # huge source stride along B → strided copy (in-tile Int32 offsets would overflow)
    assert transpose_geometry((64, 64), (1, 2**30), (64, 1), 4) is None
    # a 7-dim pattern with 5 batch dims → strided copy
    shp = (3, 4, 3, 4, 3, 16, 16)
    st = (1000003, 100003, 10003, 1003, 103, 1, 16)
    assert copy_kernel_for(shp, st, contiguous_strides(shp), 4)[0] == "strided_copy"
    # strided copy beyond Int32 spans → wide=1
    g = strided_copy_geometry((2**16, 2**16), (1, 2**16), (2**16, 1), 1, 0, 0)
    assert g.knobs.wide == 1
