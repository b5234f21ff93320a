"""CPU tests of the scan family: descriptor validation, the SKU space, the plans' launch geometry
(canonicalisation, reversal, exclusive output, chunk split) emulated in numpy, compaction
host logic, and a cross-compile of representative SKUs for sm80 / sm89 / sm90a."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as _dt
from baracuda_dsl.ops.scan import scan as S
from baracuda_dsl.ops.scan.compaction import CompactDescriptor, CompactPlan, zero_mask
from baracuda_dsl.ops.scan.scan import (ScanArgs, ScanBackwardDescriptor, ScanBackwardPlan,
                                        ScanDescriptor, ScanPlan)
from baracuda_dsl.ops.scan.specs import scan as spec

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ------------------------------------------------------------------------------ validation
def test_descriptor_validation():
    with pytest.raises(bd.InvalidProblemError):
        ScanDescriptor((4,), 0, "cumfoo", "f32")
    with pytest.raises(bd.UnsupportedError, match="wired"):
        ScanDescriptor((4,), 0, "logcumsumexp", "int32")
    with pytest.raises(bd.UnsupportedError, match="wired"):
        ScanDescriptor((4,), 0, "cumsum", "complex64")
    with pytest.raises(bd.UnsupportedError, match="exclusive"):
        ScanDescriptor((4,), 0, "cummax", "f32", exclusive=True)
    with pytest.raises(bd.UnsupportedError, match="int64"):
        ScanDescriptor((4,), 0, "cumsum", "int8", out_dtype="int8")
    with pytest.raises(bd.InvalidProblemError):
        ScanDescriptor((4,), 0, "cumsum", "f32", exclusive=1)
    with pytest.raises(bd.InvalidProblemError):
        ScanPlan.select(ScanDescriptor((4, 5), 2, "cumsum", "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        ScanPlan.select(ScanDescriptor((1,) * 9, 0, "cumsum", "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        ScanPlan.select("not a descriptor", PREF)
    assert ScanDescriptor((4,), 0, "cumsum", "int8").out_dtype == _dt("int64")
    assert ScanDescriptor((4,), 0, "cumsum", "uint16").out_dtype == _dt("uint64")
    assert ScanDescriptor((4,), 0, "cumprod", "bool").out_dtype == _dt("int64")
    assert ScanDescriptor((4,), 0, "cummax", "bool").out_dtype == _dt("bool")
    assert ScanDescriptor((3, 4), 1, "cumsum", "f32", exclusive=True).out_shape == (3, 5)
    assert ScanDescriptor((3, 4), -2, "cumsum", "f32", exclusive=True).out_shape == (4, 4)
    # backward
    with pytest.raises(bd.UnsupportedError, match="wired"):
        ScanBackwardDescriptor((4,), 0, "cumsum", "int32")
    with pytest.raises(bd.UnsupportedError, match="cumsum"):
        ScanBackwardDescriptor((4,), 0, "cumprod", "f32", exclusive=True)
    p = ScanBackwardPlan.select(ScanBackwardDescriptor((4, 6), 1, "cummin", "bf16"), PREF)
    assert dict(p.sku().knobs)["op"] == "max_bw"


def test_precision_and_sku():
    p = ScanPlan.select(ScanDescriptor((8, 100), 1, "cumsum", "bf16"), PREF)
    g = p.precision_guarantee()
    assert g.deterministic and g.bit_stable_on_same_hardware
    assert g.accumulator == _dt("f32")
    assert ScanPlan.select(ScanDescriptor((8,), 0, "cumsum", "i16"), PREF).precision_guarantee(
    ).accumulator == _dt("int64")
    assert p.sku().template == "scan"


def test_host_arrays_rejected_before_launch():
    p = ScanPlan.select(ScanDescriptor((4,), 0, "cumsum", "f32"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(ScanArgs(np.zeros(4, np.float32), np.zeros(4, np.float32)))
    p = ScanPlan.select(ScanDescriptor((4,), 0, "cummax", "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(ScanArgs(S.TensorView(256, (4,), (1,), _dt("f32")),
                                 S.TensorView(512, (4,), (1,), _dt("f32"))))


def test_out_shape_and_overlap_checked():
    f32 = _dt("f32")
    p = ScanPlan.select(ScanDescriptor((3, 4), 1, "cumsum", "f32", exclusive=True), PREF)
    x = S.TensorView(256, (3, 4), (4, 1), f32)
    with pytest.raises(bd.InvalidProblemError, match="out"):
        p.can_implement(ScanArgs(x, S.TensorView(1024, (3, 4), (4, 1), f32)))
    with pytest.raises(bd.InvalidProblemError, match="zero"):
        p.can_implement(ScanArgs(x, S.TensorView(1024, (3, 5), (0, 1), f32)))
    p.can_implement(ScanArgs(x, S.TensorView(1024, (3, 5), (1, 3), f32)))  # strided out ok


# ------------------------------------------------------------------------------- SKU space
def test_sku_space():
    from baracuda_dsl.ops import get_template

    skus = get_template("scan").skus()
    assert len(skus) <= 250
    ks = [dict(k) for k in skus]
    for op in spec.FW_OPS:
        for dt, odt in spec.op_dtypes(op):
            for path in spec.PATHS:
                assert any(k["op"] == op and k["dtype"] == dt and k["odt"] == odt
                           and k["path"] == path for k in ks), (op, dt, path)
    for k in ks:
        if k["path"] == "vec":
            assert k["vec"] * max(spec.ITEMSIZE[k["dtype"]], spec.ITEMSIZE[k["odt"]]) == 16
    assert len(get_template("compact").skus()) == 4
    # plans pick SKUs of the space
    for shape, axis, op, dt in [((8, 4096), 1, "cumsum", "f32"), ((4096, 64), 0, "cummax", "i8"),
                                ((5,), 0, "logcumsumexp", "bf16"), ((7, 3), 1, "cumprod", "u32")]:
        p = ScanPlan.select(ScanDescriptor(shape, axis, op, dt), PREF)
        assert p.sku().knobs in skus


# ------------------------------------------------------------------ geometry emulated in numpy
def _offsets(g, k, base_elems):
    """Element offsets (F, L_k) of operand k in the launch record, relative to the buffer."""
    (L, F, nchunk, chunk), e7, st = g.scalars
    ax = st[8 * k]
    so = st[8 * k + 1: 8 * k + 8]
    rows = []
    for r in range(F):
        rem, off = r, 0
        for d in range(6, 0, -1):
            q = rem // e7[d]
            off += (rem - q * e7[d]) * so[d]
            rem = q
        off += rem * so[0]
        rows.append(off)
    return np.array(rows)[:, None], ax


def _strided(buf, base, shape, strides):
    """Numpy view of ``buf`` at element ``base`` with element strides (negative allowed)."""
    isz = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf[base:], shape=shape,
                                           strides=[s * isz for s in strides])


def _emulate(op, shape, axis, xstr, ostr, reverse, exclusive, xbase=5000, obase=5000):
    rng = np.random.default_rng(0)
    xbuf = rng.standard_normal(20000)
    obuf = np.full(20000, np.nan)
    x = _strided(xbuf, xbase, shape, xstr)
    L = shape[axis]
    oshape = list(shape)
    if exclusive:
        oshape[axis] += 1
    ops = ((tuple(xstr), (xbase * 8) % 16, 8, L), None, None,
           (tuple(ostr), (obase * 8) % 16, 8, L + (1 if exclusive else 0)), None)
    g = S._geometry(op, "f64", "f64", tuple(shape), axis, L, reverse, True, ops, exclusive)
    if g.kflags & spec.REVERSE:
        assert g.knobs.path == "vec" and reverse and not exclusive
    (L_, F, nchunk, chunk), _, _ = g.scalars
    assert nchunk * chunk >= L and (nchunk - 1) * chunk < max(L, 1)
    if g.knobs.path != "col":
        assert nchunk == 1 or chunk % spec.tile_elems(g.knobs) == 0
    xo, xa = _offsets(g, 0, xbase)
    oo, oa = _offsets(g, 3, obase)
    xoff = xbase + g.ptr_off[0] // 8
    ooff = obase + g.ptr_off[3] // 8
    ell = np.arange(L)
    phys = (L - 1 - ell) if g.kflags & spec.REVERSE else ell   # in-kernel reversal (vec path)
    vals = xbuf[xoff + xo + phys * xa]                      # (F, L) in scan order
    fn = {"cumsum": np.cumsum, "cumprod": np.cumprod}[op]
    inc = fn(vals, axis=1)
    if exclusive:
        ident = 0.0 if op == "cumsum" else 1.0
        res = np.concatenate([np.full((F, 1), ident), inc], axis=1)
        obuf[ooff + oo + np.arange(L + 1) * oa] = res
    else:
        obuf[ooff + oo + phys * oa] = inc
    out = _strided(obuf, obase, oshape, ostr)
    # reference on the numpy views
    xr = np.flip(x, axis) if reverse else x
    ref = fn(xr, axis=axis)
    if exclusive:
        pad = np.full([1 if i == axis else n for i, n in enumerate(shape)],
                      0.0 if op == "cumsum" else 1.0)
        ref = np.concatenate([pad, ref], axis=axis)
    if reverse:
        ref = np.flip(ref, axis)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    return g


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_geometry_emulated(reverse, exclusive):
    cases = [
        ((6, 40), 1, (40, 1), (40, 1)),              # dense rows (vec/row path)
        ((6, 40), 0, (40, 1), (40, 1)),              # column scan (col path: L<=32 / strided)
        ((3, 4, 50), 1, (200, 50, 1), (1, 150, 3)),  # middle axis, strided output
        ((3, 4, 50), 2, (-200, 1, 4), (200, 50, 1)),  # negative outer stride, strided axis
        ((2, 3, 2, 40), 3, (1, 2, 6, -12), (240, 80, 40, 1)),  # negative axis stride
        ((5, 1, 33), 2, (33, 7, 1), (33, 0, 1)),     # extent-1 dim with odd strides
        ((100,), 0, (1,), (1,)),
        ((0, 7), 1, (7, 1), (7, 1)),
    ]
    seen = set()
    for shape, axis, xs, os_ in cases:
        if exclusive:
            os_ = tuple(os_)
            oshape = list(shape)
            oshape[axis] += 1
            os_ = tuple(int(v) for v in np.cumprod([1] + oshape[::-1])[:-1][::-1])
        if 0 in shape:
            continue
        g = _emulate("cumsum", shape, axis, xs, os_, reverse, exclusive, xbase=9000, obase=9000)
        seen.add((g.knobs.path, g.kflags))
    assert ("col", 0) in seen and ("row", 0) in seen
    if reverse and not exclusive:
        assert ("vec", spec.REVERSE) in seen


def test_paths_and_chunking():
    def geo(shape, axis, xs, L=None, op="cumsum", dt="f32"):
        L = shape[axis] if L is None else L
        ops = ((xs, 0, 4, L), None, None, (xs, 0, 4, L), None)
        return S._geometry(op, dt, dt, shape, axis, L, False, True, ops)

    g = geo((32768, 4096), 1, (4096, 1))
    assert g.knobs.path == "vec" and g.nchunk == 1
    g = geo((2**28,), 0, (1,))
    assert g.knobs.path == "vec" and g.nchunk > 100 and g.chunk % 1024 == 0
    assert S.workspace_bound(1, 2**28) >= 2 * g.ws1_off
    g = geo((4096, 32768), 0, (32768, 1))
    assert g.knobs.path == "col" and g.grid[0] == 128
    assert g.scalars[1][-1] == 32768 and g.scalars[2][7] == 1  # fibers along the unit stride
    g = geo((1000, 7), 1, (7, 1))
    assert g.knobs.path == "col"                 # short rows: one thread per row
    g = geo((8, 4097), 1, (4097, 1))
    assert g.knobs.path == "row"                 # rows not vector-aligned
    g = geo((8, 4096), 1, (1, 8))
    assert g.knobs.path == "row"                 # few strided rows: a CTA each
    ops = (((4096, 1), 0, 4, 4096), None, None, ((4096, 1), 0, 4, 4096), None)
    g = S._geometry("cumsum", "f32", "f32", (8, 4096), 1, 4096, True, False, ops)
    assert g.knobs.path == "vec" and g.kflags == spec.REVERSE   # cumsum backward
    g = S._geometry("cumprod", "f32", "f32", (8, 4096), 1, 4096, True, False, ops)
    assert g.knobs.path == "row" and g.ptr_off[0] == 4095 * 4     # negated strides


def test_compaction_host_logic():
    assert zero_mask(_dt("float32")) == 0x7FFFFFFF
    assert zero_mask(_dt("float16")) == 0x7FFF
    assert zero_mask(_dt("int64")) == -1
    assert zero_mask(_dt("uint8")) == 0xFF
    assert zero_mask(_dt("complex64")) == 0x7FFFFFFF7FFFFFFF
    with pytest.raises(bd.UnsupportedError, match="wired"):
        CompactDescriptor((4,), "complex128")
    with pytest.raises(bd.InvalidProblemError):
        CompactDescriptor((), "bool", "coords")
    with pytest.raises(bd.InvalidProblemError):
        CompactDescriptor((4,), "bool", "dense")
    p = CompactPlan.select(CompactDescriptor((3, 5000), "f32", "coords"), PREF)
    assert p._ntiles == 4 and p.workspace_size() >= 15000 * 4 + 5 * 4 + 5 * 8
    assert p.sku().template == "compact" and dict(p.sku().knobs)["isz"] == 4


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("scan", dict(op="sum", dtype="bf16", odt="bf16", path="vec", vec=8)),
                        ("scan", dict(op="max", dtype="i8", odt="i8", path="row", vec=1)),
                        ("scan", dict(op="prod_bw", dtype="f64", odt="f64", path="col", vec=1)),
                        ("compact", dict(isz=4))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256


# ------------------------------------------- the ops' combine algebra emulated in numpy
def _py_ops():
    """Python mirrors of ops/scan/kernels/scan_ops.py (same formulas, float64): element, combine,
    identity, emit — for checking the algebra (associativity, backward formulas)."""
    inf = float("inf")

    def lae(a, b):
        hi, lo = (a, b) if a > b else (b, a)
        if np.isnan(a) or np.isnan(b):
            return float("nan")
        return hi + np.log(2.0) if lo == hi else hi + np.log1p(np.exp(lo - hi))

    def mx(a, b, ge):
        take = np.isnan(b[0]) or (not np.isnan(a[0]) and ge(b[0], a[0]))
        return b if take else a

    return {
        "max": (lambda v: (v["a"], v["pos"]), lambda a, b: mx(a, b, lambda p, q: p >= q),
                (-inf, -1), lambda v, i, e: (i[0], i[1])),
        "min": (lambda v: (v["a"], v["pos"]), lambda a, b: mx(a, b, lambda p, q: p <= q),
                (inf, -1), lambda v, i, e: (i[0], i[1])),
        "lse": (lambda v: (v["a"],), lambda a, b: (lae(a[0], b[0]),), (-inf,),
                lambda v, i, e: i[0]),
        "prod_bw": (lambda v: (v["a"], v["a"] * v["b"]),
                    lambda a, b: (b[0] * a[0], b[1] + b[0] * a[1]), (1.0, -0.0),
                    lambda v, i, e: (v["nb"] if v["has_nb"] else 1.0) * (v["b"] + e[1])),
        "max_bw": (lambda v: (v["b"], 1 if (not v["has_nb"] or v["nb"] != v["a"]) else 0),
                   lambda a, b: ((b[0] if b[1] else a[0] + b[0]), 1 if (a[1] or b[1]) else 0),
                   (-0.0, 0), lambda v, i, e: i[0] if v["a"] == v["pos"] else 0.0),
        "lse_bw": (lambda v: (-v["c"], v["b"]), _lse_bw_combine, (-inf, -0.0),
                   lambda v, i, e: i[1] * np.exp(i[0] + v["a"])),
    }


def _lse_bw_combine(a, b):
    m = a[0] if a[0] > b[0] else b[0]
    ta = 0.0 if a[0] == -np.inf else a[1] * np.exp(a[0] - m)
    tb = 0.0 if b[0] == -np.inf else b[1] * np.exp(b[0] - m)
    return (m, ta + tb)


def _blocked_scan(op, vals, E=4):
    """The kernel's association: per-'thread' runs of E, prefix over runs, then per element;
    vals: list of dicts in scan order.  Returns emitted outputs."""
    elem, comb, ident, emit = _py_ops()[op]
    sts = [elem(v) for v in vals]
    out = []
    carry = ident
    for t0 in range(0, len(sts), E):
        run = sts[t0:t0 + E]
        pre = carry
        for k, s in enumerate(run):
            inc = comb(pre, s)
            out.append(emit(vals[t0 + k], inc, pre))
            pre = inc
        tot = run[0]
        for s in run[1:]:
            tot = comb(tot, s)
        carry = comb(carry, tot)
    return out


def test_forward_extreme_and_lse_algebra():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 4, 203).astype(np.float64)
    a[[5, 60, 61, 150]] = np.nan
    for op, tfn in (("max", torch.cummax), ("min", torch.cummin)):
        vals = [dict(a=a[i], pos=i) for i in range(len(a))]
        got = _blocked_scan(op, vals)
        rv, ri = tfn(torch.from_numpy(a), 0)
        assert [g[1] for g in got] == ri.tolist()
        np.testing.assert_array_equal(np.array([g[0] for g in got]), rv.numpy())
    b = rng.standard_normal(203)
    b[[3, 4]] = -np.inf
    got = _blocked_scan("lse", [dict(a=v, pos=0) for v in b])
    np.testing.assert_allclose(got, torch.logcumsumexp(torch.from_numpy(b), 0).numpy(),
                               rtol=1e-12)


def test_backward_formulas_match_autograd():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    L = 157
    x = rng.uniform(0.5, 1.5, L) * rng.choice([-1, 1], L)
    x[[0, 40, 41, 100]] = 0.0
    dy = rng.standard_normal(L)
    xt = torch.from_numpy(x).requires_grad_(True)
    for op in ("cumprod", "logcumsumexp", "cummax"):
        xt.grad = None
        xx = xt if op != "cummax" else torch.from_numpy(np.round(x * 3)).requires_grad_(True)
        if op == "cumprod":
            y = torch.cumprod(xx, 0)
        elif op == "logcumsumexp":
            y = torch.logcumsumexp(xx, 0)
        else:
            y, idx = torch.cummax(xx, 0)
        (y * torch.from_numpy(dy)).sum().backward()
        ref = xx.grad.numpy()
        yn = y.detach().numpy()
        xn = xx.detach().numpy()
        # backward scans run in reverse: logical l = physical L-1-l
        phys = list(range(L - 1, -1, -1))
        vals = []
        for l, p in enumerate(phys):
            v = dict(a=xn[p], b=dy[p], c=yn[p], pos=p)
            if op == "cumprod":
                v.update(nb=yn[p - 1] if p >= 1 else 0.0, has_nb=p >= 1)     # logical l+1
            if op == "cummax":
                ii = idx.numpy()
                v.update(a=ii[p], nb=ii[p + 1] if p + 1 < L else 0, has_nb=p + 1 < L)  # l-1
            vals.append(v)
        kop = {"cumprod": "prod_bw", "logcumsumexp": "lse_bw", "cummax": "max_bw"}[op]
        got = np.empty(L)
        got[phys] = _blocked_scan(kop, vals)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12, err_msg=op)
