"""grid_sample / affine_grid plans without a GPU: descriptor validation, the SKU spaces, the
exact launch arguments (recorded: forward, the backward's zero / scatter / cast sequence,
affine_grid both ways), the kernels' coordinate and weight arithmetic emulated in numpy float64
(torch's unnormalise / clip / reflect rules on known values; the backward's grad_grid against
finite differences of the emulated forward and grad_input against the adjoint identity;
identity affine grids reproducing the input), and a cross-compile sample for sm80 / sm89 /
sm90a."""

import itertools
import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.image.sampling import (AffineGridArgs, AffineGridBackwardArgs,
                                             AffineGridBackwardPlan, AffineGridDescriptor,
                                             AffineGridPlan, GridSampleArgs,
                                             GridSampleBackwardArgs, GridSampleBackwardPlan,
                                             GridSampleDescriptor, GridSamplePlan,
                                             affine_base_coords)
from baracuda_dsl.ops.image.specs import sampling as spec
from baracuda_dsl.tensor import TensorView, contiguous_strides

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# --------------------------------------------------------------------------- validation
def test_descriptor_validation():
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2))
    assert d.out_shape == (2, 3, 4, 7) and d.spatial == 2 and d.points == 56
    assert d.mode == "bilinear" and d.padding_mode == "zeros" and d.align_corners is False
    d3 = GridSampleDescriptor((1, 2, 3, 4, 5), (1, 6, 7, 8, 3), "nearest", "border", True,
                              "f64")
    assert d3.out_shape == (1, 2, 6, 7, 8) and d3.dtype is bd.float64
    assert GridSampleDescriptor((0, 3, 5, 6), (0, 4, 7, 2)).out_shape == (0, 3, 4, 7)
    assert GridSampleDescriptor((2, 0, 5, 6), (2, 0, 7, 2)).points == 0
    bad = [dict(input_shape=(2, 3, 5), grid_shape=(2, 4, 1)),                 # 1-D
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 7, 3)),            # last dim
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 5, 7, 2)),         # rank
           dict(input_shape=(2, 3, 5, 6), grid_shape=(3, 4, 7, 2)),            # batch
           dict(input_shape=(2, 3, 0, 6), grid_shape=(2, 4, 7, 2)),            # empty spatial
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 7, 2), mode="linear"),
           dict(input_shape=(2, 3, 4, 5, 6), grid_shape=(2, 4, 7, 1, 3), mode="bicubic"),
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 7, 2), padding_mode="wrap"),
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 7, 2), align_corners=2),
           dict(input_shape=(2, 3, 5, 6), grid_shape=(2, 4, 7, 2), align_corners="yes"),
           dict(input_shape=(2, -3, 5, 6), grid_shape=(2, 4, 7, 2))]
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            GridSampleDescriptor(**kw)
    with pytest.raises(bd.UnsupportedError):
        GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), dtype="int32")
    a = AffineGridDescriptor((2, 3, 5, 6))
    assert a.theta_shape == (2, 2, 3) and a.grid_shape == (2, 5, 6, 2)
    a3 = AffineGridDescriptor((2, 3, 4, 5, 6), True, "bf16")
    assert a3.theta_shape == (2, 3, 4) and a3.grid_shape == (2, 4, 5, 6, 3)
    assert AffineGridDescriptor((0, 1, 5, 6)).grid_shape == (0, 5, 6, 2)
    for size in [(2, 3, 5), (2, 3, 0, 6), (1, 1, 1, 1, 1, 1), (2, 3, -1, 4)]:
        with pytest.raises(bd.InvalidProblemError):
            AffineGridDescriptor(size)
    with pytest.raises(bd.InvalidProblemError):
        GridSamplePlan.select(AffineGridDescriptor((2, 3, 5, 6)), PREF)


def test_plan_skus():
    cases = [(GridSamplePlan, GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), "bicubic",
                                                  dtype="bf16"), "grid_sample", "grid_sample_fw",
              True, 0),
             (GridSampleBackwardPlan, GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2),
                                                           dtype="f16"),
              "grid_sample_backward", "grid_sample_bw", False, 4 * 180),
             (GridSampleBackwardPlan, GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2),
                                                           dtype="f32"),
              "grid_sample_backward", "grid_sample_bw", False, 0),
             (GridSampleBackwardPlan, GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2),
                                                           dtype="bf16",
                                                           input_requires_grad=False),
              "grid_sample_backward", "grid_sample_bw", True, 0)]
    for plan, desc, name, tmpl, det, ws in cases:
        p = plan.select(desc, PREF)
        sku = p.sku()
        assert sku.category is bd.OpCategory.IMAGE and sku.op == name and sku.template == tmpl
        assert dict(sku.knobs) == {"dtype": desc.dtype.short, "mode": desc.mode}
        pg = p.precision_guarantee()
        assert pg.deterministic is det and pg.bit_stable_on_same_hardware is det
        assert pg.accumulator == (bd.float64 if desc.dtype is bd.float64 else bd.float32)
        assert p.workspace_size() == ws
    for plan, op, direction in ((AffineGridPlan, "affine_grid", "fw"),
                                (AffineGridBackwardPlan, "affine_grid_backward", "bw")):
        p = plan.select(AffineGridDescriptor((2, 3, 4, 5, 6), dtype="f64"), PREF)
        assert p.sku().op == op and p.sku().template == "affine_grid"
        assert p.precision_guarantee().deterministic and p.workspace_size() == 0
        assert dict(p.sku().knobs) == {"dtype": "f64", "direction": direction}
    assert GridSamplePlan.select(GridSampleDescriptor((0, 3, 5, 6), (0, 4, 7, 2)),
                                 PREF).is_empty()
    assert GridSamplePlan.select(GridSampleDescriptor((2, 0, 5, 6), (2, 4, 7, 2)),
                                 PREF).is_empty()
    assert GridSampleBackwardPlan.select(GridSampleDescriptor((0, 3, 5, 6), (0, 4, 7, 2)),
                                         PREF).is_empty()
    # no grid points: grad_input is still written (zeros); nothing requested: nothing to do
    assert not GridSampleBackwardPlan.select(GridSampleDescriptor((2, 3, 5, 6), (2, 0, 7, 2)),
                                             PREF).is_empty()
    assert GridSampleBackwardPlan.select(GridSampleDescriptor(
        (2, 3, 5, 6), (2, 4, 7, 2), input_requires_grad=False, grid_requires_grad=False),
        PREF).is_empty()
    assert AffineGridBackwardPlan.select(AffineGridDescriptor((0, 3, 5, 6)), PREF).is_empty()


def test_sku_space():
    for t in (spec.GRID_SAMPLE_FW, spec.GRID_SAMPLE_BW):
        ks = list(t.space())
        assert len(ks) == len(set(ks)) == 12 <= 16
        assert {k.mode for k in ks} == {"bilinear", "nearest", "bicubic"}
        assert {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
    assert len(set(spec.GRID_SAMPLE_ACC.space())) == 4
    assert len(set(spec.AFFINE_GRID.space())) == 8
    for t, groups, ptrs in ((spec.GRID_SAMPLE_FW, spec.FW_GROUPS, 3),
                            (spec.GRID_SAMPLE_BW, spec.BW_GROUPS, 5),
                            (spec.GRID_SAMPLE_ACC, spec.ACC_GROUPS, 2),
                            (spec.AFFINE_GRID, spec.AFFINE_GROUPS, 2)):
        assert sum(1 for _ in t.params) == ptrs + 1 + sum(groups)
    assert spec.AFFINE_GRID.geometry(spec.AffineGridKnobs("f64", "bw")).smem_bytes >= 8 * 4 * 8


# ----------------------------------------------------------------------- recorded launches
def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def _dense(ptr, shape, dt):
    return _tv(ptr, shape, contiguous_strides(shape), dt)


def test_launch_arguments(launches):
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), "bilinear", "reflection", True, "f32")
    x = _tv(0x10000, d.input_shape, (200, 50, 8, 1), "f32")                  # strided input
    g = _tv(0x20000, d.grid_shape, (56, 14, 2, 1), "f32")
    y = _dense(0x30000, d.out_shape, "f32")
    GridSamplePlan.select(d, PREF).run(GridSampleArgs(x, g, y))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "grid_sample_fw" and knobs == {"dtype": "f32", "mode": "bilinear"}
    assert grid == (1, 1, 1) and len(args) == 4 + sum(spec.FW_GROUPS)
    assert args[:4] == [0x10000, 0x20000, 0x30000, 56]
    assert args[4:12] == [2, 3, 1, 5, 6, 1, 4, 7]
    assert args[12:17] == [200, 50, 0, 8, 1]
    assert args[17:22] == [56, 0, 14, 2, 1]
    assert args[22:27] == [84, 28, 0, 7, 1]
    assert args[27:] == [2, 1, 0]
    # 3-D, nearest, border
    d3 = GridSampleDescriptor((1, 2, 3, 4, 5), (1, 2, 3, 600, 3), "nearest", "border", False,
                              "f64")
    GridSamplePlan.select(d3, PREF).run(GridSampleArgs(
        _dense(0x10000, d3.input_shape, "f64"), _dense(0x20000, d3.grid_shape, "f64"),
        _dense(0x30000, d3.out_shape, "f64")))
    name, knobs, grid, args, _ = launches[-1]
    assert grid == (15, 1, 1) and args[3] == 3600 and args[4:12] == [1, 2, 3, 4, 5, 2, 3, 600]
    assert args[17:22] == [10800, 5400, 1800, 3, 1] and args[27:] == [1, 0, 1]
    with pytest.raises(bd.InvalidProblemError):           # broadcast output
        GridSamplePlan.select(d, PREF).run(GridSampleArgs(x, g, _tv(0x30000, d.out_shape,
                                                                    (0, 28, 7, 1), "f32")))
    with pytest.raises(bd.InvalidProblemError):           # wrong grid shape
        GridSamplePlan.select(d, PREF).run(GridSampleArgs(x, _dense(0x20000, (2, 4, 6, 2),
                                                                    "f32"), y))


def test_backward_launch_sequence(launches):
    # f16: zero the f32 workspace, scatter, cast into grad_input
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), "bicubic", "zeros", False, "f16")
    p = GridSampleBackwardPlan.select(d, PREF)
    assert p.workspace_size() == 180 * 4
    dy = _tv(0x10000, d.out_shape, (1, 2, 100, 10), "f16")
    x = _dense(0x20000, d.input_shape, "f16")
    g = _dense(0x30000, d.grid_shape, "f16")
    dx = _tv(0x40000, d.input_shape, (90, 1, 18, 3), "f16")                  # channels last
    dg = _dense(0x50000, d.grid_shape, "f16")
    with pytest.raises(bd.WorkspaceTooSmallError):
        p.run(GridSampleBackwardArgs(dy, x, g, dx, dg))
    n0 = len(launches)
    p.run(GridSampleBackwardArgs(dy, x, g, dx, dg), workspace=bd.Workspace(0x90000, 720))
    assert [l[0] for l in launches[n0:]] == ["grid_sample_acc", "grid_sample_bw",
                                             "grid_sample_acc"]
    z, b, c = (l[3] for l in launches[n0:])
    assert launches[n0][1] == {"dtype": "f16"}
    assert z == [0x90000, 0x40000, 180, 2, 3, 1, 5, 6, 90, 30, 0, 6, 1, 90, 1, 0, 18, 3, 0]
    assert c == z[:-1] + [1]
    assert len(b) == 6 + sum(spec.BW_GROUPS)
    assert b[:6] == [0x10000, 0x20000, 0x30000, 0x90000, 0x50000, 56]
    assert b[6:14] == [2, 3, 1, 5, 6, 1, 4, 7]
    assert b[14:19] == [1, 2, 0, 100, 10] and b[19:24] == [90, 30, 0, 6, 1]
    assert b[24:29] == [56, 0, 14, 2, 1] and b[29:34] == [90, 30, 0, 6, 1]
    assert b[34:39] == [56, 0, 14, 2, 1] and b[39:] == [0, 0, 0, 1, 1]
    # f32: grad_input is the accumulator (zeroed in place, no cast); grad_grid not requested
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), dtype="f32", grid_requires_grad=False)
    p = GridSampleBackwardPlan.select(d, PREF)
    dx = _tv(0x40000, d.input_shape, (90, 1, 18, 3), "f32")
    n0 = len(launches)
    p.run(GridSampleBackwardArgs(_dense(0x10000, d.out_shape, "f32"),
                                 _dense(0x20000, d.input_shape, "f32"),
                                 _dense(0x30000, d.grid_shape, "f32"), dx))
    assert [l[0] for l in launches[n0:]] == ["grid_sample_acc", "grid_sample_bw"]
    z, b = launches[n0][3], launches[n0 + 1][3]
    assert z[:2] == [0x40000, 0x40000] and z[8:13] == [90, 1, 0, 18, 3] and z[-1] == 0
    assert b[3] == 0x40000 and b[29:34] == [90, 1, 0, 18, 3] and b[34:39] == [0] * 5
    assert b[39:] == [0, 0, 0, 1, 0]
    with pytest.raises(bd.InvalidProblemError):           # grad_grid not requested
        p.run(GridSampleBackwardArgs(_dense(0x10000, d.out_shape, "f32"),
                                     _dense(0x20000, d.input_shape, "f32"),
                                     _dense(0x30000, d.grid_shape, "f32"), dx,
                                     _dense(0x50000, d.grid_shape, "f32")))
    with pytest.raises(bd.InvalidProblemError):           # grad_input required
        p.run(GridSampleBackwardArgs(_dense(0x10000, d.out_shape, "f32"),
                                     _dense(0x20000, d.input_shape, "f32"),
                                     _dense(0x30000, d.grid_shape, "f32")))
    # grid_sample_bw only (no grad_input): one launch, want flags (0, 1)
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 4, 7, 2), "nearest", dtype="bf16",
                             input_requires_grad=False)
    n0 = len(launches)
    GridSampleBackwardPlan.select(d, PREF).run(GridSampleBackwardArgs(
        _dense(0x10000, d.out_shape, "bf16"), _dense(0x20000, d.input_shape, "bf16"),
        _dense(0x30000, d.grid_shape, "bf16"), None, _dense(0x50000, d.grid_shape, "bf16")))
    assert [l[0] for l in launches[n0:]] == ["grid_sample_bw"]
    assert launches[-1][3][-2:] == [0, 1]
    # no grid points: grad_input zeros (zero + cast), no scatter launch
    d = GridSampleDescriptor((2, 3, 5, 6), (2, 0, 7, 2), dtype="bf16")
    n0 = len(launches)
    GridSampleBackwardPlan.select(d, PREF).run(GridSampleBackwardArgs(
        _dense(0x10000, d.out_shape, "bf16"), _dense(0x20000, d.input_shape, "bf16"),
        _dense(0x30000, d.grid_shape, "bf16"), _dense(0x40000, d.input_shape, "bf16"),
        _dense(0x50000, d.grid_shape, "bf16")), workspace=bd.Workspace(0x90000, 720))
    assert [l[0] for l in launches[n0:]] == ["grid_sample_acc", "grid_sample_acc"]


def test_affine_launch_arguments(launches):
    d = AffineGridDescriptor((2, 3, 5, 6), True, "f32")
    th = _tv(0x10000, (2, 2, 3), (1, 12, 4), "f32")
    gr = _dense(0x20000, d.grid_shape, "f32")
    AffineGridPlan.select(d, PREF).run(AffineGridArgs(th, gr))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "affine_grid" and knobs == {"dtype": "f32", "direction": "fw"}
    assert grid == (1, 1, 1) and len(args) == 3 + sum(spec.AFFINE_GROUPS)
    assert args == [0x10000, 0x20000, 60, 2, 1, 5, 6, 1, 12, 4, 60, 0, 12, 2, 1, 1, 0]
    d3 = AffineGridDescriptor((4, 1, 2, 3, 5), False, "bf16")
    AffineGridBackwardPlan.select(d3, PREF).run(AffineGridBackwardArgs(
        _dense(0x20000, d3.grid_shape, "bf16"), _dense(0x10000, d3.theta_shape, "bf16")))
    name, knobs, grid, args, _ = launches[-1]
    assert knobs == {"dtype": "bf16", "direction": "bw"} and grid == (12, 1, 1)
    assert args == [0x10000, 0x20000, 12, 4, 2, 3, 5, 12, 4, 1, 90, 45, 15, 3, 1, 0, 1]


def test_host_arrays_rejected_before_launch():
    p = GridSamplePlan.select(GridSampleDescriptor((1, 1, 4, 4), (1, 2, 2, 2)), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(GridSampleArgs(np.zeros((1, 1, 4, 4), np.float32),
                             np.zeros((1, 2, 2, 2), np.float32),
                             np.zeros((1, 1, 2, 2), np.float32)))


# ---------------------------------------------------------- kernel arithmetic, emulated
def _unnorm(c, S, al):
    return ((c + 1) / 2 * (S - 1), (S - 1) / 2) if al else (((c + 1) * S - 1) / 2, S / 2)


def _clip(c, S):
    if c <= 0:
        return 0.0, 0.0
    if c >= S - 1:
        return float(S - 1), 0.0
    return c, 1.0


def _reflect(c, lo2, hi2):
    if lo2 == hi2:
        return 0.0, 0.0
    mn, span = lo2 / 2, (hi2 - lo2) / 2
    a = c - mn
    sgn = -1.0 if a < 0 else 1.0
    a = abs(a)
    extra, flips = math.fmod(a, span), math.floor(a / span)
    return (extra + mn, sgn) if flips % 2 == 0 else (span - extra + mn, -sgn)


def _pad(c, S, pad, al):
    g = 1.0
    if pad == "border":
        c, g = _clip(c, S)
    elif pad == "reflection":
        c, g1 = _reflect(c, 0, 2 * (S - 1)) if al else _reflect(c, -1, 2 * S - 1)
        c, g2 = _clip(c, S)
        g = g1 * g2
    if not math.isfinite(c) or c > 2147483646 or c < -2147483648:
        c = -100.0
    return c, g


def _src(c, S, pad, al):
    u, gu = _unnorm(c, S, al)
    s, gs = _pad(u, S, pad, al)
    return s, gu * gs


def _cubic(t):
    A = -0.75

    def c1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def c2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def _cubic_grad(t):
    A = -0.75
    x0, x1, x2, x3 = -1 - t, -t, 1 - t, 2 - t
    return [(-3 * A * x0 - 10 * A) * x0 - 8 * A, (-3 * (A + 2) * x1 - 2 * (A + 3)) * x1,
            (3 * (A + 2) * x2 - 2 * (A + 3)) * x2, (3 * A * x3 - 10 * A) * x3 + 8 * A]


def _taps(pt, sp, mode, pad, al):
    """[(index tuple (z, y, x) or (y, x), weight, d weight / d (x, y[, z]))] of one grid point,
    as the kernels compute them (out-of-range taps dropped)."""
    k = len(sp)
    if mode == "bicubic":
        (ux, mx), (uy, my) = _unnorm(pt[0], sp[1], al), _unnorm(pt[1], sp[0], al)
        fx, fy = math.floor(ux), math.floor(uy)
        cx, cy = _cubic(ux - fx), _cubic(uy - fy)
        gx, gy = _cubic_grad(ux - fx), _cubic_grad(uy - fy)
        out = []
        for i, j in itertools.product(range(4), range(4)):
            xi = int(_pad(fx - 1 + i, sp[1], pad, al)[0])
            yj = int(_pad(fy - 1 + j, sp[0], pad, al)[0])
            if 0 <= xi < sp[1] and 0 <= yj < sp[0]:
                out.append(((yj, xi), cx[i] * cy[j], (-gx[i] * cy[j] * mx, -gy[j] * cx[i] * my)))
        return out
    src = [_src(pt[a], sp[k - 1 - a], pad, al) for a in range(k)]      # per axis x, y, (z)
    if mode == "nearest":
        idx = tuple(int(np.rint(src[a][0])) for a in reversed(range(k)))
        ok = all(0 <= i < s for i, s in zip(idx, sp))
        return [(idx, 1.0, (0.0,) * k)] if ok else []
    out = []
    for corner in itertools.product((0, 1), repeat=k):                  # (.., y, x) bits
        w, dws, idx = 1.0, [1.0] * k, []
        for a in range(k):
            c, m = src[a]
            f = math.floor(c)
            bit = corner[k - 1 - a]
            wa = c - f if bit else f + 1 - c
            w *= wa
            for b in range(k):
                dws[b] *= (1.0 if bit else -1.0) * m if a == b else wa
            idx.append(f + bit)
        idx = tuple(reversed(idx))
        if all(0 <= i < s for i, s in zip(idx, sp)):
            out.append((idx, w, tuple(dws)))
    return out


def _emulate(x, grid, mode, pad, al, dy=None):
    """(forward output, grad_input, grad_grid) of the emulated kernels."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    pts = grid.shape[1:-1]
    y = np.zeros((n, c) + pts)
    dx = np.zeros_like(x)
    dg = np.zeros_like(grid)
    for b in range(n):
        for p in np.ndindex(*pts):
            for idx, w, dw in _taps(grid[(b,) + p], sp, mode, pad, al):
                v = x[(b, slice(None)) + idx]
                y[(b, slice(None)) + p] += w * v
                if dy is not None:
                    g = dy[(b, slice(None)) + p]
                    dx[(b, slice(None)) + idx] += w * g
                    dg[(b,) + p] += np.array(dw) * float(np.dot(v, g))
    return y, dx, dg


def test_source_index_known_values():
    # align_corners: -1 → 0, 1 → S-1; without: -1 → -0.5, 1 → S-0.5
    assert _src(-1.0, 5, "zeros", True)[0] == 0.0 and _src(1.0, 5, "zeros", True)[0] == 4.0
    assert _src(-1.0, 5, "zeros", False)[0] == -0.5 and _src(1.0, 5, "zeros", False)[0] == 4.5
    assert _src(1.0, 5, "border", False) == (4.0, 0.0)
    # reflection without align_corners reflects about the image edges: 5.5 → 3.5 (grad −1)
    assert _src(1.4, 5, "reflection", False) == pytest.approx((3.5, -2.5))
    assert _src(-1.4, 5, "reflection", False) == pytest.approx((0.5, -2.5))
    # with align_corners about the corner centres: 4 + 0.8 → 3.2
    assert _src(1.4, 5, "reflection", True) == pytest.approx((3.2, -2.0))
    assert _src(0.3, 1, "reflection", True) == (0.0, 0.0)          # degenerate range
    assert _src(float("nan"), 5, "zeros", True)[0] == -100.0
    assert _src(1e30, 5, "zeros", True)[0] == -100.0
    assert sum(_cubic(0.3)) == pytest.approx(1.0) and _cubic(0.0) == pytest.approx([0, 1, 0, 0])
    # the coefficient "grads" are minus the derivatives
    for t in (0.1, 0.5, 0.77):
        h = 1e-6
        fd = [(a - b) / (2 * h) for a, b in zip(_cubic(t + h), _cubic(t - h))]
        assert [-g for g in _cubic_grad(t)] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_emulated_forward_known_values():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    # align_corners: grid corners are the corner pixels; bilinear at pixel centres is exact
    g = np.array([[[[-1.0, -1.0], [1.0, 1.0]], [[1 / 3, 0.0], [-1.0, 1.0]]]])
    for mode in ("bilinear", "nearest", "bicubic"):
        y = _emulate(x, g, mode, "zeros", True)[0]
        np.testing.assert_allclose(y, [[[[0.0, 11.0], [6.0, 8.0]]]], atol=1e-12)
    # without align_corners a point between pixel centres averages them; zeros outside
    y = _emulate(x, np.array([[[[-0.5, -2 / 3]]]]), "bilinear", "zeros", False)[0]
    assert y.item() == pytest.approx(0.5)
    y = _emulate(x, np.array([[[[-1.0, -1.0]]]]), "bilinear", "zeros", False)[0]
    assert y.item() == pytest.approx(0.0)                  # a quarter of pixel 0 = 0
    y = _emulate(x + 4, np.array([[[[-1.0, -1.0]]]]), "bilinear", "zeros", False)[0]
    assert y.item() == pytest.approx(1.0)                  # 4 · 1/4
    y = _emulate(x + 4, np.array([[[[-1.0, -1.0]]]]), "bilinear", "border", False)[0]
    assert y.item() == pytest.approx(4.0)
    # nearest rounds half to even: source 1.5 → 2
    y = _emulate(x, np.array([[[[0.0, -1.0]]]]), "nearest", "zeros", True)[0]
    assert y.item() == 2.0


@pytest.mark.parametrize("mode,k", [("bilinear", 2), ("bilinear", 3), ("bicubic", 2),
                                    ("nearest", 2), ("nearest", 3)])
@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("al", [False, True])
def test_emulated_backward_consistent(mode, k, pad, al):
    """grad_grid = finite differences of the forward; <grad_input, x'> = <dy, forward(x')>."""
    rng = np.random.default_rng(7)
    sp = (4, 5) if k == 2 else (3, 4, 5)
    x = rng.standard_normal((2, 3) + sp)
    grid = rng.uniform(-1.3, 1.3, (2,) + (2, 3, 2)[:k] + (k,)) if k == 2 else \
        rng.uniform(-1.3, 1.3, (2, 2, 2, 3, 3))
    pts = grid.shape[1:-1]
    dy = rng.standard_normal((2, 3) + pts)
    _, dx, dg = _emulate(x, grid, mode, pad, al, dy)
    x2 = rng.standard_normal(x.shape)
    y2 = _emulate(x2, grid, mode, pad, al)[0]
    assert np.sum(dx * x2) == pytest.approx(np.sum(dy * y2), rel=1e-10, abs=1e-10)
    if mode == "nearest":
        assert not dg.any()
        return
    h = 1e-6
    for i in np.ndindex(*grid.shape):
        gp, gm = grid.copy(), grid.copy()
        gp[i] += h
        gm[i] -= h
        fd = (np.sum(dy * _emulate(x, gp, mode, pad, al)[0])
              - np.sum(dy * _emulate(x, gm, mode, pad, al)[0])) / (2 * h)
        assert dg[i] == pytest.approx(fd, rel=1e-4, abs=1e-5), (i, dg[i], fd)


def test_affine_identity_grid_reproduces_input():
    rng = np.random.default_rng(3)
    for size, al in [((1, 2, 4, 5), False), ((1, 2, 4, 5), True), ((1, 1, 3, 4, 5), True),
                     ((1, 1, 3, 4, 5), False)]:
        k = len(size) - 2
        axes = [affine_base_coords(s, al) for s in reversed(size[2:])]      # x, y, (z)
        grid = np.zeros((1,) + size[2:] + (k,))
        for p in np.ndindex(*size[2:]):
            grid[(0,) + p] = [axes[a][p[k - 1 - a]] for a in range(k)]
        x = rng.standard_normal(size)
        for mode in ("bilinear", "nearest") + (("bicubic",) if k == 2 else ()):
            y = _emulate(x, grid, mode, "zeros", al)[0]
            np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)
    assert affine_base_coords(1, False) == [0.0] and affine_base_coords(3, True) == [-1, 0, 1]
    assert affine_base_coords(4, False) == [-0.75, -0.25, 0.25, 0.75]


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("grid_sample_fw", dict(dtype="bf16", mode="bilinear")),
                        ("grid_sample_bw", dict(dtype="f32", mode="bicubic")),
                        ("grid_sample_acc", dict(dtype="f16")),
                        ("affine_grid", dict(dtype="f64", direction="bw"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS
