"""Elementwise forward ops on the GPU against float64 references (tests/_elementwise_refs.py).

Plan API with torch CUDA tensors: every forward op of the op table x every wired dtype (flat path
on a dense 1-D operand with a partial last vector, s4 path on transposed operands, Python scalars
in each input position, every parameter set); outputs poisoned first (NaN / complemented bytes).
Then, on representative ops: odd and empty shapes, strided / misaligned / negative-stride views
and output views (bytes outside the view must stay untouched), broadcasting, rank 5-7 operands
(the temporaries fallback and the s8 copy), in-place and overlapping in-place calls, scalar fills;
special values (NaN / ±inf / ±0) per the array API standard and numpy's integer semantics.
Last, the array_api namespace on the same kernels (operators, in-place forms, where / clip /
astype, the ML extensions, array_api_compat) and a hypothesis test against numpy.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import _elementwise_refs as R
from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

pytestmark = pytest.mark.gpu

FORWARD_CASES = [(op, dt) for op, s in OPS.items()
                 if not op.endswith("_bw") and op != "cast" for dt in s.dtypes]


def _torch():
    return pytest.importorskip("torch")


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex))


def _plan(op, dt, inputs, params=(), shape=None):
    from baracuda_dsl.ops.elementwise.elementwise import ElementwiseDescriptor, ElementwisePlan

    shapes = tuple(None if _is_scalar(x) else tuple(x.shape) for x in inputs)
    return ElementwisePlan.select(ElementwiseDescriptor(op, shapes, dt, None, tuple(params),
                                                        shape))


def _run(op, dt, inputs, outs, params=(), shape=None):
    """Select the plan for these operands, run it, synchronize; returns the plan."""
    torch = _torch()
    from baracuda_dsl.ops.elementwise.elementwise import ElementwiseArgs

    plan = _plan(op, dt, inputs, params, shape)
    plan.run(ElementwiseArgs(list(inputs), list(outs)))
    torch.cuda.synchronize()
    return plan


def _out_view(ref, dt, layout="dense"):
    """(output view of ref's shape, its base tensor, index of the base elements outside the
    view or None) — the view poisoned so that every element differs from ``ref``."""
    shape = ref.shape
    if layout == "dense" or ref.ndim == 0 or ref.size == 0:
        t = R.poisoned(ref, dt, shape)
        return t, t, None
    if layout == "T":
        base = R.poisoned(np.swapaxes(ref, -1, -2), dt, np.swapaxes(ref, -1, -2).shape)
        return base.transpose(-1, -2), base, None
    if layout == "step2":
        big = np.repeat(ref, 2, axis=0)
        base = R.poisoned(big, dt, big.shape)
        return base[0::2], base, (slice(1, None, 2),)
    if layout == "offset1":
        flat = np.concatenate([ref.reshape(-1)[:1], ref.reshape(-1)])
        base = R.poisoned(flat, dt, flat.shape)
        return base[1:].view(shape), base, (slice(0, 1),)
    if layout == "rev6":  # a permuted (non-collapsible) output view
        axes = tuple(reversed(range(ref.ndim)))
        base = R.poisoned(np.transpose(ref, axes), dt, np.transpose(ref, axes).shape)
        return base.permute(*axes), base, None
    raise ValueError(layout)


def _same(a, b) -> bool:
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True)
    return np.array_equal(a, b)


def check_case(op, dt, host_ins, params=(), in_layout="dense", out_layout="dense",
               scalars=(), what=""):
    """Run ``op`` on ``host_ins`` placed on the device with ``in_layout`` (one layout or one per
    input; inputs listed in ``scalars`` are passed as Python scalars — their first element),
    into a poisoned ``out_layout`` output, and compare with the reference."""
    spec = OPS[op]
    in_dts = spec.in_dtypes(dt)
    odt = spec.out_dtypes(dt)[0]
    dev_ins, ref_ins, keep = [], [], []
    for k, h in enumerate(host_ins):
        if k in scalars:
            v = R.python_scalar(h, in_dts[k])
            dev_ins.append(v)
            ref_ins.append(np.asarray(h).reshape(-1)[0])
            continue
        lay = in_layout if isinstance(in_layout, str) else in_layout[k]
        view, base = R.device_view(h, in_dts[k], lay)
        keep.append(base)
        dev_ins.append(view)
        ref_ins.append(h)
    ref = R.reference(op, dt, ref_ins, params)
    out, base, outside = _out_view(ref, odt, out_layout)
    before = R.to_host(base, odt) if outside is not None else None
    plan = _run(op, dt, dev_ins, [out], params)
    assert tuple(plan.out_shape) == ref.shape
    tag = f"{op}[{dt}] {what} in={in_layout} out={out_layout} scalars={tuple(scalars)} p={params}"
    R.check(R.to_host(out, odt), ref, odt, R.tolerance(op, dt, ref_ins, params, ref), tag,
            op not in R.ZERO_SIGN_FREE)
    if outside is not None:
        after = R.to_host(base, odt)
        assert _same(after[outside], before[outside]), f"{tag}: wrote outside the output view"
    return plan


# ====================================================================== every op x every dtype
@pytest.mark.parametrize("op,dt", FORWARD_CASES, ids=[f"{o}-{d}" for o, d in FORWARD_CASES])
def test_every_op_every_dtype(op, dt):
    _torch()
    spec = OPS[op]
    rng = np.random.default_rng(_seed(op, dt))
    for params in R.params_for(op):
        # flat path: dense, 1031 elements (a partial last vector and a partial last block)
        check_case(op, dt, R.make_inputs(op, dt, (1031,), rng), params, what="flat")
        # s4 path: every input a transposed view, 2-D odd extents
        check_case(op, dt, R.make_inputs(op, dt, (29, 37), rng), params, in_layout="T",
                   what="s4")
        if spec.nin >= 2:  # each input position as a Python scalar, flat and strided
            ins = R.make_inputs(op, dt, (257,), rng)
            ins2 = R.make_inputs(op, dt, (9, 31), rng)
            for k in range(spec.nin):
                check_case(op, dt, ins, params, scalars=(k,), what="scalar")
                check_case(op, dt, ins2, params, in_layout="T", scalars=(k,), what="scalar s4")


# ================================================================== layouts on representative ops
LAYOUT_CASES = [("add", "f32"), ("add", "bf16"), ("add", "i8"), ("add", "c64"),
                ("multiply", "u64"), ("where", "f16"), ("clip", "i32"), ("fma", "f64"),
                ("gelu", "bf16"), ("exp", "c128"), ("equal", "bool"), ("copy", "fp8e4m3"),
                ("bitwise_left_shift", "u16"), ("addcdiv", "f32"), ("abs", "c64"),
                ("greater", "i64")]
_LIDS = [f"{o}-{d}" for o, d in LAYOUT_CASES]


@pytest.mark.parametrize("op,dt", LAYOUT_CASES, ids=_LIDS)
def test_odd_shapes(op, dt):
    _torch()
    rng = np.random.default_rng(_seed("odd", op, dt))
    for shape in [(), (1,), (7,), (1023,), (4097,), (3, 5, 7), (2, 1, 33)]:
        for params in R.params_for(op):
            check_case(op, dt, R.make_inputs(op, dt, shape, rng), params, what=str(shape))


@pytest.mark.parametrize("op,dt", LAYOUT_CASES[:6], ids=_LIDS[:6])
def test_empty_shapes(op, dt):
    torch = _torch()
    nin = OPS[op].nin
    odt = OPS[op].out_dtypes(dt)[0]
    in_dts = OPS[op].in_dtypes(dt)
    for shapes in [[(0,)] * nin, [(3, 0)] * nin, [(0,)] + [(1,)] * (nin - 1),
                   [(3, 0)] + [(3, 1)] * (nin - 1)]:
        ins = [R.to_device(np.zeros(s, R.NP_DTYPE.get(d, np.float32)), d)
               for s, d in zip(shapes, in_dts)]
        out_shape = np.broadcast_shapes(*shapes)
        out = torch.empty(out_shape, dtype=R.torch_dtype(odt), device="cuda")
        plan = _run(op, dt, ins, [out])
        assert plan.is_empty() and tuple(plan.out_shape) == out_shape


@pytest.mark.parametrize("op,dt", LAYOUT_CASES, ids=_LIDS)
def test_strided_and_misaligned_views(op, dt):
    """Inputs and outputs as transposed, step-2 and offset-by-one (misaligned) views; bytes of
    the output buffers outside the views must stay untouched."""
    _torch()
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("strided", op, dt))
    lays = ["T", "step2", "offset1", "dense"]
    params = R.params_for(op)[-1]
    for out_layout in ("dense", "T", "step2", "offset1"):
        for j in range(len(lays)):
            in_layout = tuple(lays[(j + k) % len(lays)] for k in range(nin))
            check_case(op, dt, R.make_inputs(op, dt, (33, 65), rng), params, in_layout,
                       out_layout, what="views")
    # every operand misaligned by one element (flat is impossible: s4 on a dense layout)
    check_case(op, dt, R.make_inputs(op, dt, (4097,), rng), params, "offset1", "offset1",
               what="misaligned")


def _host_of(arr, dt):
    """Host representation of an array_api Array / numpy result of dtype ``dt``."""
    a = np.asarray(arr)
    k = R.kind(dt)
    if k == "b":
        return a.astype(np.uint8)
    if k == "f":
        return a.astype(np.float64)
    if k == "c":
        return a.astype(np.complex128)
    return a


@pytest.mark.parametrize("op,dt", [("add", "f32"), ("subtract", "i16"), ("where", "f64"),
                                   ("exp", "f32"), ("multiply", "c64")])
def test_negative_strides(op, dt):
    """Negative strides (torch has none): array_api Arrays flipped with xp.flip, and cupy
    views with negative steps, as inputs and outputs of the Plan."""
    _torch()
    import array_api as xp

    spec = OPS[op]
    in_dts = spec.in_dtypes(dt)
    odt = spec.out_dtypes(dt)[0]
    rng = np.random.default_rng(_seed("neg", op, dt))
    host = R.make_inputs(op, dt, (17, 23), rng)
    ref = R.reference(op, dt, host)
    tol = R.tolerance(op, dt, host, (), ref)
    ins = [xp.flip(xp.asarray(np.ascontiguousarray(h[::-1, ::-1]).astype(R.NP_DTYPE[d])))
           for h, d in zip(host, in_dts)]
    poison = R.poison_host(ref, odt, ref.shape)
    if R.kind(odt) in "fc":
        poison = poison.astype(R.NP_DTYPE[odt])
    out = xp.flip(xp.asarray(np.ascontiguousarray(poison[::-1])), axis=0)
    _run(op, dt, ins, [out])
    R.check(_host_of(out.to_numpy(), odt), ref, odt, tol, f"{op} xp.flip views")
    cp = pytest.importorskip("cupy")
    cins = [cp.asarray(np.ascontiguousarray(h[::-1]).astype(R.NP_DTYPE[d]))[::-1]
            for h, d in zip(host, in_dts)]
    cout = cp.asarray(np.ascontiguousarray(poison[:, ::-1]))[:, ::-1]
    _run(op, dt, cins, [cout])
    R.check(_host_of(cp.asnumpy(cout), odt), ref, odt, tol, f"{op} cupy negative steps")


BCAST = {
    1: [[(5, 1, 7)]],
    2: [[(64, 33), (33,)], [(64, 1), (1, 33)], [(1,), (8, 9)], [(6, 1, 5), (6, 4, 5)],
        [(4, 1, 3), (5, 1)]],
    3: [[(64, 33), (33,), (64, 1)], [(1, 33), (64, 1), (1,)], [(7,), (3, 1), (2, 1, 1)]],
}


@pytest.mark.parametrize("op,dt", LAYOUT_CASES, ids=_LIDS)
def test_broadcasting(op, dt):
    _torch()
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("bcast", op, dt))
    params = R.params_for(op)[0]
    for shapes in BCAST[nin]:
        host = [R.make_inputs(op, dt, s, rng)[k] for k, s in enumerate(shapes)]
        check_case(op, dt, host, params, what=f"bcast {shapes}")
        # the broadcast operands also strided
        check_case(op, dt, host, params, in_layout="step2", out_layout="T",
                   what=f"bcast strided {shapes}")


RANK_CASES = [("add", "f32"), ("where", "bf16"), ("fma", "f16"), ("multiply", "i64"),
              ("gelu", "f64"), ("copy", "c64"), ("copy", "u8"), ("not_equal", "c128")]


@pytest.mark.parametrize("op,dt", RANK_CASES, ids=[f"{o}-{d}" for o, d in RANK_CASES])
def test_rank5_to_7_fallback(op, dt):
    """Operands that do not collapse to rank <= 4: broadcast rank 6-7, a reversed-axes rank-6
    input and output (temporaries + the copy op; the s8 path for copy)."""
    _torch()
    spec = OPS[op]
    rng = np.random.default_rng(_seed("rank", op, dt))
    nin = spec.nin
    in_dts = spec.in_dtypes(dt)
    pools = {1: [[(2, 3, 1, 4, 1, 5)]],
             2: [[(2, 3, 1, 4, 1, 5), (3, 2, 4, 2, 1)],
                 [(2, 1, 2, 1, 2, 1, 3), (2, 1, 2, 1, 2, 1)]],
             3: [[(2, 3, 1, 4, 1, 5), (3, 2, 4, 2, 1), (2, 1, 1, 1, 1, 1)]]}
    for shapes in pools[nin]:
        host = [R.make_inputs(op, dt, s, rng)[k] for k, s in enumerate(shapes)]
        check_case(op, dt, host, what=f"rank {shapes}")
    shape = (2, 3, 2, 3, 2, 3)
    host = R.make_inputs(op, dt, shape, rng)
    axes = tuple(reversed(range(6)))
    ins = [R.to_device(np.ascontiguousarray(np.transpose(h, axes)), d).permute(*axes)
           for h, d in zip(host, in_dts)]
    ref = R.reference(op, dt, host)
    odt = spec.out_dtypes(dt)[0]
    for layout in ("dense", "rev6"):
        out, base, _ = _out_view(ref, odt, layout)
        _run(op, dt, ins, [out])
        R.check(R.to_host(out, odt), ref, odt, R.tolerance(op, dt, host, (), ref),
                f"{op} rank6 {layout}")


@pytest.mark.parametrize("dt", ["f32", "bf16", "i32", "c128", "bool"])
def test_in_place(dt):
    """out = an input (the same view), also a strided in-place view: each element is read and
    written by the same thread, no staging needed."""
    _torch()
    op = "logical_xor" if dt == "bool" else "add"
    rng = np.random.default_rng(_seed("inplace", dt))
    a, b = R.make_inputs(op, dt, (129, 65), rng)
    ref = R.reference(op, dt, [a, b])
    tol = R.tolerance(op, dt, [a, b], (), ref)
    for target in (0, 1):
        x, y = R.to_device(a, dt), R.to_device(b, dt)
        out = (x, y)[target]
        _run(op, dt, [x, y], [out])
        R.check(R.to_host(out, dt), ref, dt, tol, f"{op} in place into input {target}")
    base = R.to_device(np.repeat(a, 2, axis=0), dt)  # rows 2i and 2i+1 both hold a[i]
    x = base[0::2]
    _run(op, dt, [x, R.to_device(b, dt)], [x])
    R.check(R.to_host(x, dt), ref, dt, tol, f"{op} strided in place")
    R.check(R.to_host(base[1::2], dt), a, dt, 0.0, "rows outside the view untouched")


@pytest.mark.parametrize("dt", ["f32", "bf16", "i16", "c64"])
def test_overlapping_in_place(dt):
    """Outputs overlapping inputs through different strides must give the result of reading all
    inputs first: out = x with x.T as the other operand, a unary op into its own transpose, and
    a shifted 1-D overlap (misaligned output: temporaries + the copy op)."""
    _torch()
    rng = np.random.default_rng(_seed("overlap", dt))
    (a,) = R.make_inputs("negative", dt, (97, 97), rng)
    x = R.to_device(a, dt)
    _run("add", dt, [x, x.transpose(0, 1)], [x])
    ref = R.reference("add", dt, [a, a.T])
    R.check(R.to_host(x, dt), ref, dt, R.tolerance("add", dt, [a, a.T], (), ref), "x = x + x.T")
    x = R.to_device(a, dt)
    _run("negative", dt, [x], [x.transpose(0, 1)])
    R.check(R.to_host(x, dt), R.reference("negative", dt, [a.T]), dt, 0.0, "x.T = -x")
    (v,) = R.make_inputs("square", dt, (5000,), rng)
    x = R.to_device(v, dt)
    _run("square", dt, [x[:-3]], [x[3:]])
    exp = v.copy()
    exp[3:] = R.reference("square", dt, [v[:-3]])
    # the first 3 elements are untouched copies: exact, within any bound
    R.check(R.to_host(x, dt), exp, dt, R.tolerance("square", dt, ref=exp), "x[3:] = x[:-3]**2")


@pytest.mark.parametrize("dt", ["f32", "bf16", "u8", "i64", "c128", "bool", "fp8e5m2"])
def test_scalar_fill_into_views(dt):
    """The copy op with a scalar operand and an explicit output shape (the namespace's fill):
    dense, transposed and step-2 views."""
    _torch()
    val = {"f32": -2.5, "bf16": 0.1, "u8": 255, "i64": -(2 ** 40), "c128": 1.5 - 2j,
           "bool": True, "fp8e5m2": 3.0}[dt]
    shape = (33, 17)
    exp_val = R.round_host(np.array(val), dt) if R.kind(dt) in "fc" else np.array(val)
    ref = np.broadcast_to(exp_val, shape).copy()
    for layout in ("dense", "T", "step2"):
        out, base, outside = _out_view(ref, dt, layout)
        before = R.to_host(base, dt) if outside is not None else None
        _run("copy", dt, [val], [out], shape=shape)
        R.check(R.to_host(out, dt), ref, dt, 0.0, f"fill {layout}")
        if outside is not None:
            assert _same(R.to_host(base, dt)[outside], before[outside])


# ============================================================================= special values
NAN, INF = float("nan"), float("inf")
FLOATS = ["f32", "f64", "f16", "bf16"]


def _special(op, dt, *cols, params=()):
    """Run ``op`` on host columns (rounded to dt) and return (inputs as the kernel saw them,
    read back from the device; the output)."""
    spec = OPS[op]
    in_dts = spec.in_dtypes(dt)
    host = [R.round_host(np.asarray(c), d) for c, d in zip(cols, in_dts)]
    odt = spec.out_dtypes(dt)[0]
    ref = R.reference(op, dt, host, params)
    out = R.poisoned(ref, odt, ref.shape)
    dev = [R.to_device(h, d) for h, d in zip(host, in_dts)]
    _run(op, dt, dev, [out], params)
    return [R.to_host(t, d) for t, d in zip(dev, in_dts)], R.to_host(out, odt)


@pytest.mark.parametrize("dt", FLOATS)
def test_special_maximum_minimum_propagate_nan(dt):
    _torch()
    a = [NAN, 1.0, NAN, -INF, INF, 2.0, -3.0, 0.5]
    b = [1.0, NAN, NAN, INF, -INF, 2.0, 4.0, -0.5]
    for op, f in (("maximum", np.maximum), ("minimum", np.minimum)):
        host, got = _special(op, dt, a, b)
        R.check(got, f(host[0], host[1]), dt, 0.0, op, zero_sign=False)


@pytest.mark.parametrize("dt", FLOATS)
def test_special_sign_round_signbit_copysign(dt):
    _torch()
    x = [-0.0, 0.0, NAN, INF, -INF, -3.0, 2.0, 1e-3]
    _, got = _special("sign", dt, x)
    # the array API standard: "If x_i is -0 or +0, the result is 0" — +0 for either zero (what
    # the conformance suite checks; numpy's np.sign(-0.0) is +0.0 too), not a sign-preserving -0
    R.check(got, [0.0, 0.0, NAN, 1.0, -1.0, -1.0, 1.0, 1.0], dt, 0.0, "sign")
    h = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -0.0, INF, NAN, 0.25, -0.75]
    _, got = _special("round", dt, h)
    R.check(got, np.rint(np.array(h)), dt, 0.0, "round half to even")
    for op, f in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
        _, got = _special(op, dt, h)
        R.check(got, f(np.array(h)), dt, 0.0, op)
    host, got = _special("signbit", dt, [-0.0, 0.0, -1.0, 1.0, -INF, INF, NAN, -NAN])
    # NaN signs as stored (torch's CPU conversion to bf16 does not keep them)
    R.check(got, [True, False, True, False, True, False, np.signbit(host[0][6]),
                  np.signbit(host[0][7])], "bool", 0.0, "signbit")
    host, got = _special("copysign", dt, [1.0, 1.0, -0.0, 0.0, NAN, INF, 2.0],
                         [-0.0, 0.0, 1.0, -1.0, -1.0, -0.0, NAN])
    R.check(got, [-1.0, 1.0, 0.0, -0.0, NAN, -INF, math.copysign(2.0, host[1][6])], dt, 0.0,
            "copysign")


@pytest.mark.parametrize("dt", ["f32", "f64", "f16"])
def test_special_floor_divide_follows_standard_remainder_numpy(dt):
    """Every combination of signed zeros, infinities, NaN and finite values (value, NaN and the
    sign of zeros), in the same dtype: floor_divide against the array API standard's table
    (:func:`_elementwise_refs.floor_divide`: numpy's values except ±inf // finite nonzero = ±inf
    and finite // ±inf = a signed zero, where the standard prefers floor(x1 / x2) to numpy's NaN
    and −1); remainder against numpy (Python's % semantics)."""
    _torch()
    vals = [5.5, -5.5, 0.0, -0.0, INF, -INF, NAN, 3.0, -3.0, 7.0, 0.1, -2.0]
    a, b = (np.array(v) for v in zip(*[(x, y) for x in vals for y in vals]))
    npd = R.NP_DTYPE[dt]
    host, got = _special("floor_divide", dt, a, b)
    R.check(got, R.floor_divide(host[0], host[1], npd), dt, 0.0, "floor_divide")
    host, got = _special("remainder", dt, a, b)
    with np.errstate(all="ignore"):
        exp = np.remainder(host[0].astype(npd), host[1].astype(npd)).astype(np.float64)
    R.check(got, exp, dt, 0.0, "remainder")


@pytest.mark.parametrize("dt", FLOATS)
def test_special_nextafter(dt):
    """nextafter steps one ulp of ``dt`` (numpy.nextafter for f16/f32/f64, the bf16 bit
    pattern for bf16), 0 → the smallest subnormal toward y, x == y → y, NaN → NaN."""
    _torch()
    fmax = {"f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308, "f16": 65504.0,
            "bf16": 3.3895313892515355e38}[dt]
    x = [1.0, 1.0, 0.0, 0.0, -0.0, 0.0, -1.5, INF, -INF, fmax, NAN, 1.0, 3.0, -0.0, 2.0]
    y = [2.0, 0.0, 1.0, -1.0, 1.0, -0.0, -INF, 0.0, 0.0, INF, 1.0, NAN, 3.0, -0.0, -2.0]
    host, got = _special("nextafter", dt, x, y)
    R.check(got, R.nextafter(host[0], host[1], dt), dt, 0.0, f"nextafter {dt}")
    if dt in ("f32", "f64"):
        npd = R.NP_DTYPE[dt]
        R.check(got, np.nextafter(host[0].astype(npd), host[1].astype(npd)).astype(np.float64),
                dt, 0.0, "vs numpy")
    rng = np.random.default_rng(_seed("nextafter", dt))
    a, b = R.make_inputs("nextafter", dt, (3000,), rng)
    host, got = _special("nextafter", dt, a, b)
    R.check(got, R.nextafter(a, b, dt), dt, 0.0, "random")


@pytest.mark.parametrize("dt", FLOATS + ["c64", "c128"])
def test_special_classification(dt):
    _torch()
    re = [NAN, INF, -INF, 0.0, -0.0, 1.0, 1e-30, 65504.0]
    if R.kind(dt) == "c":
        im = [0.0, 0.0, 1.0, NAN, INF, 0.0, 2.0, -INF]
        col = R._cplx(np.array(re), np.array(im))
    else:
        col = np.array(re)
    for op in ("isnan", "isinf", "isfinite"):
        host, got = _special(op, dt, col)
        R.check(got, getattr(np, op)(host[0]), "bool", 0.0, op)


@pytest.mark.parametrize("dt", FLOATS)
def test_special_hypot_logaddexp_divide(dt):
    _torch()
    big = {"f64": 1e300, "f32": 1e38, "f16": 3e4, "bf16": 1e38}[dt]
    a = [INF, NAN, NAN, -INF, 0.0, -0.0, 3.0, big, NAN]
    b = [NAN, -INF, 1.0, 2.0, 0.0, -0.0, 4.0, big, INF]
    host, got = _special("hypot", dt, a, b)
    exp = np.hypot(host[0], host[1])
    R.check(got, exp, dt, R.tolerance("hypot", dt, host, (), exp), "hypot")
    la = [-INF, INF, INF, NAN, -INF, 1.0, 0.0, 5.0]
    lb = [-INF, INF, -INF, 1.0, 1.0, NAN, -0.0, 5.0]
    host, got = _special("logaddexp", dt, la, lb)
    with np.errstate(all="ignore"):
        exp = np.logaddexp(host[0], host[1])
    R.check(got, exp, dt, R.tolerance("logaddexp", dt, host, (), exp), "logaddexp")
    host, got = _special("divide", dt, [1.0, -1.0, 0.0, -0.0, NAN, INF, INF],
                         [0.0, 0.0, 0.0, -1.0, 1.0, INF, -2.0])
    with np.errstate(all="ignore"):
        exp = np.divide(host[0], host[1])
    R.check(got, exp, dt, 0.0, "divide special")


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_special_functions_edges(dt):
    _torch()
    _, got = _special("erfinv", dt, [1.0, -1.0, 1.5, -1.5, 0.0, NAN])
    R.check(got, [INF, -INF, NAN, NAN, 0.0, NAN], dt, 0.0, "erfinv edges")
    _, got = _special("lgamma", dt, [1.0, 2.0, 0.0, -2.0, INF, -INF, NAN])
    R.check(got, [0.0, 0.0, INF, INF, INF, INF, NAN], dt, 0.0, "lgamma edges", zero_sign=False)
    _, got = _special("digamma", dt, [0.0, -0.0, -1.0, -3.0, INF])
    R.check(got, [-INF, INF, NAN, NAN, INF], dt, 0.0, "digamma edges")
    _, got = _special("logit", dt, [0.0, 1.0, 0.5], params=(-1.0,))
    R.check(got, [-INF, INF, 0.0], dt, 0.0, "logit edges")


INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("dt", INTS)
def test_integer_semantics(dt):
    """numpy's integer semantics: floor division / remainder with divisor 0 give 0, MIN // -1
    wraps, shifts by >= the bit width give 0 (left) / sign fill (right) and negative counts
    act like large ones, abs(MIN) wraps, negative of unsigned wraps, pow with negative
    exponents truncates (1, ±1 for bases ±1, else 0)."""
    _torch()
    info = np.iinfo(R.NP_DTYPE[dt])
    signed = R.kind(dt) == "i"
    lo, hi = int(info.min), int(info.max)
    a = [lo, lo, hi, 7, 0, 5, hi, lo + 1] + ([-7, 7, -7, -1, -1] if signed else [7, 9, 250, 1, 0])
    b = [-1 if signed else 1, 0, 0, 2, 0, 3, hi, -1 if signed else 3] + (
        [2, -2, -2, 0, 3] if signed else [2, 4, 3, 0, 1])
    with np.errstate(all="ignore"):
        for op in ("floor_divide", "remainder"):
            host, got = _special(op, dt, a, b)
            exp = getattr(np, op)(host[0], host[1])
            R.check(got, exp, dt, 0.0, op)
    nb = R.bits(dt)
    x = [lo, hi, 1, 3, lo, hi, 5, lo]
    s = [nb, nb, nb + 1, 200 % (1 << nb) if nb > 8 else 100, nb - 1, 0, 1, nb - 1]
    if signed:
        x += [-5, 5]
        s += [-1, -3]
    for op, f in (("bitwise_left_shift", np.left_shift), ("bitwise_right_shift", np.right_shift)):
        host, got = _special(op, dt, x, s)
        with np.errstate(all="ignore"):
            R.check(got, f(host[0], host[1]), dt, 0.0, op)
    host, got = _special("abs", dt, [lo, hi, 0, 1])
    R.check(got, np.abs(host[0]), dt, 0.0, "abs")
    host, got = _special("negative", dt, [lo, hi, 0, 1])
    R.check(got, np.negative(host[0]), dt, 0.0, "negative")
    pb = [2, 3, 1, 0, 2, 7] + ([-1, -1, -2, 1, 0] if signed else [255, 2, 1, 3, 0])
    pe = [nb, nb - 1, 1000 % (1 << (nb - 1)), 0, 1, 3] + ([-3, -4, -1, -5, -2] if signed else
                                                          [2, nb + 3, 0, 5, 0])
    host, got = _special("pow", dt, pb, pe)
    R.check(got, R.int_pow(host[0], host[1], dt), dt, 0.0, "pow")


# =============================================================================== namespace
def _xp():
    _torch()
    import array_api as xp

    return xp


def test_xp_operators_and_functions_match_numpy():
    xp = _xp()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = (rng.standard_normal((33, 17)) + 3).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    eq = np.testing.assert_array_equal
    eq(xp.add(x, y).to_numpy(), a + b)
    eq((x + y).to_numpy(), a + b)
    eq((x - y).to_numpy(), a - b)
    eq((x * y).to_numpy(), a * b)
    eq((x / y).to_numpy(), a / b)
    eq((x + 2).to_numpy(), a + np.float32(2))
    eq((2 - x).to_numpy(), np.float32(2) - a)
    eq((x * 0.5).to_numpy(), a * np.float32(0.5))
    eq((-x).to_numpy(), -a)
    eq(abs(x).to_numpy(), np.abs(a))
    a64 = a.astype(np.float64)
    sq = a64 ** 2  # x ** 2 may run as pow or as square: pow's (looser) bound
    R.check((x ** 2).to_numpy(), sq, "f32", R.tolerance("pow", "f32", [a64, 2.0], (), sq), "x**2")
    eq((x // y).to_numpy(), a // b)
    eq((x % y).to_numpy(), a % b)
    eq(xp.maximum(x, y).to_numpy(), np.maximum(a, b))
    ex = np.exp(a64)
    R.check(xp.exp(x).to_numpy(), ex, "f32", R.tolerance("exp", "f32", [a64], (), ex), "exp")
    for name, f in (("__lt__", np.less), ("__le__", np.less_equal), ("__gt__", np.greater),
                    ("__ge__", np.greater_equal), ("__eq__", np.equal), ("__ne__", np.not_equal)):
        r = getattr(x, name)(y)
        assert r.dtype == xp.bool
        eq(r.to_numpy(), f(a, b))
    eq((x < 0.5).to_numpy(), a < np.float32(0.5))
    i = xp.asarray(np.arange(-8, 8, dtype=np.int32))
    eq((i & 3).to_numpy(), np.arange(-8, 8, dtype=np.int32) & 3)
    eq((i << 2).to_numpy(), np.arange(-8, 8, dtype=np.int32) << 2)
    eq((~i).to_numpy(), ~np.arange(-8, 8, dtype=np.int32))
    assert (x + y).shape == (33, 17) and (x + y).dtype == xp.float32


def test_xp_in_place_forms():
    xp = _xp()
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 9)).astype(np.float32)
    b = rng.standard_normal((16, 9)).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    tail = x[1:]  # a view: it must see the in-place update
    x += y
    ref = a + b
    np.testing.assert_array_equal(x.to_numpy(), ref)
    np.testing.assert_array_equal(tail.to_numpy(), ref[1:])
    x *= 2
    ref = ref * np.float32(2)
    np.testing.assert_array_equal(x.to_numpy(), ref)
    x[::2] += 1
    ref[::2] += np.float32(1)
    np.testing.assert_array_equal(x.to_numpy(), ref)
    x[:, 1:4] -= y[:, 1:4]
    ref[:, 1:4] -= b[:, 1:4]
    np.testing.assert_array_equal(x.to_numpy(), ref)
    i = xp.asarray(np.arange(10, dtype=np.int64))
    i //= 3
    np.testing.assert_array_equal(i.to_numpy(), np.arange(10) // 3)


def test_xp_where_clip_astype():
    xp = _xp()
    rng = np.random.default_rng(9)
    a = rng.standard_normal((7, 31)).astype(np.float64)
    b = rng.standard_normal((31,)).astype(np.float64)
    c = rng.random((7, 1)) < 0.5
    x, y, cond = xp.asarray(a), xp.asarray(b), xp.asarray(c)
    np.testing.assert_array_equal(xp.where(cond, x, y).to_numpy(), np.where(c, a, b))
    np.testing.assert_array_equal(xp.where(cond, x, 0.0).to_numpy(), np.where(c, a, 0.0))
    np.testing.assert_array_equal(xp.clip(x, -0.5, 0.5).to_numpy(), np.clip(a, -0.5, 0.5))
    np.testing.assert_array_equal(xp.clip(x, min=-0.25).to_numpy(), np.maximum(a, -0.25))
    lo, hi = xp.asarray(-np.abs(b)), xp.asarray(np.abs(b))
    np.testing.assert_array_equal(xp.clip(x, lo, hi).to_numpy(),
                                  np.minimum(np.maximum(a, -np.abs(b)), np.abs(b)))
    np.testing.assert_array_equal(xp.astype(x, xp.float32).to_numpy(), a.astype(np.float32))
    a32 = a.astype(np.float32).astype(np.float64)  # f32-exact: one rounding to f16 / bf16
    x32 = xp.asarray(a32)
    np.testing.assert_array_equal(xp.astype(x32, xp.float16).to_numpy(), a32.astype(np.float16))
    np.testing.assert_array_equal(xp.astype(x * 10, xp.int32).to_numpy(),
                                  (a * 10).astype(np.int32))
    bf = xp.astype(x32, xp.bfloat16).to_numpy().astype(np.float64)
    np.testing.assert_array_equal(bf, R.round_bf16(a32))
    np.testing.assert_array_equal(xp.astype(cond, xp.uint8).to_numpy(), c.astype(np.uint8))


def test_xp_ml_extensions():
    xp = _xp()
    rng = np.random.default_rng(10)
    a = rng.uniform(-5, 5, (12, 40))
    x = xp.asarray(a)

    def close(got, op, ins, params=(), dt="f64"):
        """Every element of ``got`` within op's bound (the error model of _elementwise_refs)
        of the float64 reference on ``ins``."""
        ref = R.reference(op, dt, ins, params)
        R.check(got.to_numpy().astype(np.float64), ref, dt,
                R.tolerance(op, dt, ins, params, ref), f"xp.{op}[{dt}]")

    close(xp.relu(x), "relu", [a])
    close(xp.gelu(x), "gelu", [a])
    close(xp.silu(x), "silu", [a])
    close(xp.softplus(x), "softplus", [a], (1.0, 20.0))
    h, g = a[:, :20], a[:, 20:]
    close(xp.glu(x), "glu", [h, g])
    close(xp.swiglu(x), "swiglu", [h, g])
    w = rng.uniform(0.05, 0.5, (40,))
    close(xp.prelu(x, xp.asarray(w)), "prelu", [a, w])
    e, t = rng.standard_normal((12, 40)), rng.uniform(0, 1, (12, 40))
    close(xp.lerp(x, xp.asarray(e), xp.asarray(t)), "lerp", [a, e, t])
    f = xp.asarray(a.astype(np.float32))
    got = xp.gelu(f)
    assert got.dtype == xp.float32
    close(got, "gelu", [a.astype(np.float32).astype(np.float64)], dt="f32")


def test_xp_array_api_compat_namespace():
    xp = _xp()
    compat = pytest.importorskip("array_api_compat")
    x = xp.asarray(np.arange(6, dtype=np.float32))
    assert compat.array_namespace(x) is xp
    assert compat.array_namespace(x + 1) is xp


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    given = None


if given is not None:
    _HYP_DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32,
                   "bool": np.bool_}

    @st.composite
    def _hyp_case(draw):
        op = draw(st.sampled_from(["add", "multiply", "maximum", "equal"]))
        names = ["float32", "float64", "int32"] + (["bool"] if op == "equal" else [])
        dname = draw(st.sampled_from(names))
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                        max_side=5))
        steps = [tuple(draw(st.sampled_from([1, 2, -1])) for _ in s) for s in
                 shapes.input_shapes]
        seed = draw(st.integers(0, 2 ** 31 - 1))
        return op, dname, shapes.input_shapes, steps, seed

    @given(_hyp_case())
    @settings(max_examples=50, deadline=None)
    def test_xp_hypothesis_binary_vs_numpy(case):
        """Random broadcastable shapes (rank <= 4), strided / reversed views, float32 / float64 /
        int32 / bool: add, multiply, maximum, equal bit-identical to numpy."""
        xp = _xp()
        op, dname, shapes, steps, seed = case
        rng = np.random.default_rng(seed)
        npd = _HYP_DTYPES[dname]
        hosts, views = [], []
        for shape, step in zip(shapes, steps):
            big = tuple(n * abs(s) for n, s in zip(shape, step))
            if dname == "bool":
                base = rng.random(big) < 0.5
            elif dname == "int32":
                base = rng.integers(-1000, 1000, big).astype(npd)
            else:
                base = (rng.standard_normal(big) * 10).astype(npd)
            key = tuple(slice(None, None, s) for s in step)
            hosts.append(base[key])
            views.append(xp.asarray(base)[key])
        got = getattr(xp, op)(views[0], views[1]).to_numpy()
        exp = getattr(np, op)(hosts[0], hosts[1])
        assert got.shape == exp.shape and got.dtype == exp.dtype
        np.testing.assert_array_equal(got, exp)
