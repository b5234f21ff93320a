"""Random family on the GPU: Philox words bit-exact against the numpy reference of
test_random_cpu.py, reproducibility and launch-shape independence, statistics (moments, KS,
frequencies), dropout forward/backward exactness, Gumbel-softmax (rows, hard one-hot, gradient vs
torch float64 autograd given the same noise).

Values are checked element by element (tests/_checks.py) against poisoned outputs; every bound
is derived from the output dtype and the computation (see each test)."""

import importlib
import math

import numpy as np
import pytest

import test_random_cpu as ref
from tests._checks import assert_within, TINY, assert_close, bounds, eps, poison

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float16", "bfloat16", "float64"]
#: compute dtype (half types compute in f32, f64 in f64)
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}


def _torch():
    return pytest.importorskip("torch")


def _R():
    from baracuda_dsl.ops.random import random as R

    return R


def _draw(dist, shape, dtype, seed=0, offset=0, **kw):
    torch = _torch()
    R = _R()
    tdt = getattr(torch, dtype)
    if dtype in ("uint32", "uint64"):
        # torch's shell dtypes have no fill kernel: all-ones bytes = the dtype's max, the
        # sentinel tests._checks.poison uses for integers
        out = torch.empty(shape, dtype=tdt, device="cuda")
        if out.numel():
            out.view(-1).view(torch.uint8).fill_(0xFF)
    else:
        out = poison(torch, tuple(shape), tdt)
    plan = R.RandomPlan.select(R.RandomDescriptor(tuple(shape), dist, dtype))
    plan.run(R.RandomArgs(out, seed, offset, **kw))
    torch.cuda.synchronize()
    return out, plan


def _np(t):
    torch = _torch()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.cpu().numpy()


def _bf16_round(a):
    """float32 → bfloat16 (round to nearest even) → float32, in numpy."""
    b = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return (b.astype(np.uint32) << 16).view(np.float32)


def _round_to(a32, dtype):
    if dtype == "float16":
        return a32.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        return _bf16_round(a32)
    return a32


def _ks(sample, cdf):
    """Kolmogorov–Smirnov statistic and its 1e-4-level critical value."""
    x = np.sort(np.asarray(sample, dtype=np.float64))
    n = len(x)
    f = cdf(x)
    d = max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))
    return d, math.sqrt(-0.5 * math.log(1e-4 / 2)) / math.sqrt(n)


_check = assert_within   # rel per element + the op's own error bound abs_err


def row_depth(n):
    """Most rounded adds on a path of a softmax row sum (the row engine, common/rows.py: <= 64
    register elements or every 256-th element a thread, 5 shuffle levels, <= 32 warp and 8
    cluster partials in order); never more than n.  Same model as tests/softmax."""
    return max(1, min(n, max(64, -(-n // 256)) + 45))


# ============================================================ bit-exact words / uniforms
@pytest.mark.parametrize("n", [1, 3, 7, 1000, 4097])
@pytest.mark.parametrize("seed,offset", [(0, 0), (1234, 17), ((1 << 64) - 3, (1 << 40) + 5),
                                         (-7, (1 << 32) - 1)])
def test_bits_u32_bit_exact(n, seed, offset):
    torch = _torch()
    out, plan = _draw("bits", (n,), "uint32", seed, offset)
    got = out.view(torch.int32).cpu().numpy().view(np.uint32)
    assert np.array_equal(got, ref.stream_words(seed, offset, n))
    assert plan.blocks() == (n + 3) // 4


@pytest.mark.parametrize("n", [1, 5, 1001])
def test_bits_u64_bit_exact(n):
    torch = _torch()
    out, plan = _draw("bits", (n,), "uint64", 99, 3)
    got = out.view(torch.int64).cpu().numpy().view(np.uint64)
    assert np.array_equal(got, ref.words64(99, 3, n))
    assert plan.blocks() == (2 * n + 3) // 4


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1,), (7,), (33, 5), (2, 3, 1001)])
def test_uniform_bit_exact(dtype, shape):
    out, _ = _draw("uniform", shape, dtype, 42, 5)
    n = int(np.prod(shape))
    expect = ref.ref_unit(42, 5, n, dtype)
    got = _np(out).astype(np.float64).reshape(-1)
    assert np.array_equal(got, expect)
    assert got.min() >= 0.0 and got.max() < 1.0


def test_uniform_range():
    out, _ = _draw("uniform", (100000,), "float32", 7, 0, a=-3.0, b=5.0)
    u = _np(out)
    assert u.min() >= -3.0 and u.max() < 5.0
    # low + u·(high − low): high − low = 8 and 8u are exact, and −3 + 8u is a multiple of 2^-21
    # below 8 in magnitude — exact in f32: the float64 value rounded once (correctly)
    expect = -3.0 + 8.0 * ref.ref_unit(7, 0, 100000, "float32")
    assert_close(out, expect, *bounds("float32"), what="uniform [-3, 5)")


def test_empty_draw():
    out, plan = _draw("normal", (0, 5), "float32")
    assert out.shape == (0, 5) and plan.blocks() == 0


# ============================================================ reproducibility / launch shape
@pytest.mark.parametrize("dist,dtype", [("uniform", "float32"), ("normal", "float32"),
                                        ("normal", "float64"), ("randint", "int64"),
                                        ("gumbel", "bfloat16"), ("bernoulli", "uint8")])
def test_prefix_independent_of_launch_size(dist, dtype):
    torch = _torch()
    kw = dict(low=-10, high=10) if dist == "randint" else {}
    big, _ = _draw(dist, (100003,), dtype, 5, 9, **kw)
    small, _ = _draw(dist, (10,), dtype, 5, 9, **kw)
    again, _ = _draw(dist, (100003,), dtype, 5, 9, **kw)
    assert torch.equal(big[:10], small)
    assert torch.equal(big, again)
    # a later offset is a later slice of the same stream (wpe words per element)
    wpe = 2 if dtype in ("float64", "int64") else 1
    later, _ = _draw(dist, (10,), dtype, 5, 9 + 3, **kw)
    k = 3 * 4 // wpe
    assert torch.equal(big[k:k + 10], later)
    other, _ = _draw(dist, (100003,), dtype, 6, 9, **kw)
    assert not torch.equal(big, other)


def test_generator_sequence():
    torch = _torch()
    import array_api as xp
    from array_api import random as xr

    g = xr.Generator(2024)
    a = torch.from_dlpack(g.random((1000,)))
    b = torch.from_dlpack(g.random((1000,)))
    assert g.offset == 500
    assert not torch.equal(a, b)
    h = xr.default_rng(2024)
    assert torch.equal(torch.from_dlpack(h.random((1000,))), a)
    assert torch.equal(torch.from_dlpack(h.random((1000,))), b)
    z = g.standard_normal((3, 4), dtype=xp.float64)
    assert tuple(z.shape) == (3, 4) and g.offset == 500 + 6
    i = torch.from_dlpack(g.integers(3, 9, size=1000)).cpu().numpy()
    assert i.min() >= 3 and i.max() <= 8
    i = torch.from_dlpack(g.integers(3, 9, size=1000, endpoint=True, dtype=xp.int32)).cpu()
    assert int(i.max()) == 9 and i.dtype == torch.int32
    m = torch.from_dlpack(g.bernoulli(0.25, size=(4000,)))
    assert m.dtype == torch.bool and 0.2 < m.float().mean().item() < 0.3
    u = torch.from_dlpack(g.uniform(2.0, 3.0, size=10)).cpu().numpy()
    assert u.min() >= 2.0 and u.max() < 3.0
    p = torch.from_dlpack(g.permutation(1000)).cpu().numpy()
    assert np.array_equal(np.sort(p), np.arange(1000))
    assert not np.array_equal(p, np.arange(1000))
    x = xp.asarray(np.arange(20, dtype=np.float32).reshape(10, 2))
    px = torch.from_dlpack(g.permutation(x)).cpu().numpy()
    assert np.array_equal(np.sort(px[:, 0]), np.arange(0, 20, 2))
    assert np.array_equal(px[:, 1], px[:, 0] + 1)


# ============================================================ statistics
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_uniform_stats(dtype):
    n = 1 << 20
    out, _ = _draw("uniform", (n,), dtype, 11, 0)
    u = _np(out).astype(np.float64)
    # k random bits give the discrete uniform {j / 2^k}: mean (1 − 2^-k)/2, var (1 − 4^-k)/12
    k = {"float32": 24, "float16": 11, "bfloat16": 8, "float64": 53}[dtype]
    assert abs(u.mean() - (1 - 2.0 ** -k) / 2) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - (1 - 4.0 ** -k) / 12) < 5 * math.sqrt(1 / 180 / n)
    d, crit = _ks(u[: 1 << 16], lambda x: np.clip(x, 0, 1))
    assert d < crit + (2.0 ** -8 if dtype == "bfloat16" else 0.0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_stats_and_reference(dtype):
    n = 1 << 20
    out, _ = _draw("normal", (n,), dtype, 13, 2, a=1.5, b=2.0)
    z = _np(out).astype(np.float64)
    assert abs(z.mean() - 1.5) < 5 * 2.0 / math.sqrt(n)
    assert abs(z.var() - 4.0) < 5 * 4.0 * math.sqrt(2 / n)
    erf = np.vectorize(math.erf)
    d, crit = _ks(z[: 1 << 15], lambda x: 0.5 * (1 + erf((x - 1.5) / (2.0 * math.sqrt(2)))))
    assert d < crit + (2.0 ** -7 if dtype in ("float16", "bfloat16") else 0.0)
    expect = ref.ref_normal(13, 2, 4096, dtype, 1.5, 2.0)
    # Box–Muller in the compute dtype: r = sqrt(−2 log u1) (log <= 4 ulps relative, halved by
    # the root, + the root's rounding), θ = 2π·u2 (|Δθ| <= 4πu), cos / sin (2u absolute), the
    # products and the mean: <= 24u·(|mean| + std·r_max) absolute (r_max = sqrt(2·ln 2^k), the
    # smallest u1 being 2^-k), then the rounding into the dtype relative to each value
    k = 53 if dtype == "float64" else 24
    s = 1.5 + 2.0 * math.sqrt(2 * k * math.log(2))
    _check(out.reshape(-1)[:4096], expect, dtype, bounds(dtype)[0], 24 * eps(CT[dtype]) * s,
           "normal vs the stream's Box–Muller")


def test_gumbel_stats():
    n = 1 << 20
    out, _ = _draw("gumbel", (n,), "float32", 17, 0)
    g = _np(out).astype(np.float64)
    assert abs(g.mean() - 0.5772156649) < 5 * math.sqrt(math.pi ** 2 / 6 / n)
    assert abs(g.var() - math.pi ** 2 / 6) < 0.02
    assert np.isfinite(g).all()
    # −log(−log u): the inner log's relative error (a few u) becomes an absolute error of the
    # outer log, the outer log and the negations round relative to the value: 4 roundings
    # relative to |g| plus 8u absolute
    for dt in ("float32", "float64"):
        out, _ = _draw("gumbel", (4096,), dt, 17, 0)
        _check(out, ref.ref_gumbel(17, 0, 4096, dt), dt,
               bounds(dt, compute=dt, terms=4)[0], 8 * eps(dt), f"gumbel {dt}")


@pytest.mark.parametrize("dtype", ["bool", "uint8", "float32", "bfloat16", "float64"])
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli(dtype, p):
    n = 100003
    out, _ = _draw("bernoulli", (n,), dtype, 19, 1, p=p)
    got = _np(out).astype(np.float64)
    expect = ref.ref_bernoulli(19, 1, n, p)
    assert np.array_equal(got, expect.astype(np.float64))
    assert abs(got.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.mark.parametrize("dtype,low,high", [("int32", -5, 7), ("int32", -(1 << 31), 1 << 31),
                                            ("int64", 10, 17), ("int64", -(1 << 40), 1 << 41),
                                            ("int64", -(1 << 63), 1 << 63)])
def test_randint(dtype, low, high):
    n = 60000
    out, _ = _draw("randint", (n,), dtype, 23, 4, low=low, high=high)
    got = out.cpu().numpy()
    assert np.array_equal(got, ref.ref_randint(23, 4, n, low, high, dtype))
    assert got.min() >= low and got.max() <= high - 1
    if high - low < 100:
        counts = np.bincount(got - low, minlength=high - low)
        e = n / (high - low)
        chi2 = ((counts - e) ** 2 / e).sum()
        k = high - low - 1
        assert chi2 < k + 6 * math.sqrt(2 * k)


# ============================================================ dropout
def _dropout_ref(x, keep, p, dtype):
    """y = x·s with s = 1/(1−p) rounded to the compute type, product rounded to dtype."""
    if dtype == "float64":
        return np.where(keep, x * (1.0 / (1.0 - p) if p < 1 else 0.0), 0.0)
    s = np.float32(1.0 / (1.0 - p)) if p < 1 else np.float32(0)
    return _round_to(np.where(keep, x.astype(np.float32) * s, np.float32(0)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1,), (7,), (33, 5), (4, 1001), (0, 3)])
@pytest.mark.parametrize("p", [0.0, 0.25, 1.0])
def test_dropout_forward_backward(dtype, shape, p):
    torch = _torch()
    R = _R()
    tdt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    y = torch.full(shape, float("nan"), dtype=tdt, device="cuda")
    mask = torch.full(shape, 7, dtype=torch.uint8, device="cuda")
    plan = R.DropoutPlan.select(R.DropoutDescriptor(shape, dtype, p))
    plan.run(R.DropoutArgs(x, y, 31, 8, mask))
    n = int(np.prod(shape))
    keep = ref.ref_keep(31, 8, n, p).reshape(shape)
    xn = _np(x)
    expect = _dropout_ref(xn, keep, p, dtype)
    assert np.array_equal(_np(y), expect.astype(_np(y).dtype))
    assert np.array_equal(mask.cpu().numpy().astype(bool), keep)
    if p == 0.0:
        assert torch.equal(y, x)
    # backward regenerates the same mask
    dy = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    dx = torch.full(shape, float("nan"), dtype=tdt, device="cuda")
    bw = R.DropoutBackwardPlan.select(R.DropoutBackwardDescriptor(shape, dtype, p))
    bw.run(R.DropoutBackwardArgs(dy, dx, 31, 8))
    assert np.array_equal(_np(dx), _dropout_ref(_np(dy), keep, p, dtype).astype(_np(dx).dtype))


def test_dropout_mask_fraction():
    torch = _torch()
    R = _R()
    n = 1 << 20
    x = torch.ones(n, device="cuda")
    y = poison(torch, (n,), torch.float32)
    m = torch.ones(n, dtype=torch.bool, device="cuda")     # ~10 % must be cleared
    R.DropoutPlan.select(R.DropoutDescriptor((n,), "float32", 0.1)).run(
        R.DropoutArgs(x, y, 3, 0, m))
    frac = 1 - m.float().mean().item()
    assert abs(frac - 0.1) < 5 * math.sqrt(0.09 / n)
    assert torch.equal(y, m.float() * float(np.float32(1 / 0.9)))


def test_dropout_rejects_strided_and_misaligned():
    torch = _torch()
    R = _R()
    from baracuda_dsl.errors import InvalidProblemError, MisalignedOperandError

    x = torch.randn(8, 6, device="cuda")
    plan = R.DropoutPlan.select(R.DropoutDescriptor((6, 8), "float32", 0.5))
    with pytest.raises(InvalidProblemError):
        plan.run(R.DropoutArgs(x.t(), torch.empty(6, 8, device="cuda"), 0, 0))
    flat = torch.randn(50, device="cuda")
    plan = R.DropoutPlan.select(R.DropoutDescriptor((48,), "float32", 0.5))
    with pytest.raises(MisalignedOperandError):
        plan.run(R.DropoutArgs(flat[1:49], torch.empty(48, device="cuda"), 0, 0))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_namespace_dropout_strided(dtype):
    torch = _torch()
    import array_api as xp
    from array_api import random as xr
    from array_api._random_extensions import dropout

    tdt = getattr(torch, dtype)
    base = torch.randn(40, 33, device="cuda").to(tdt)
    xt = base.t()[:, 1:]                       # transposed + offset view
    x = xp.from_dlpack(xt)
    g = xr.Generator(77)
    y = torch.from_dlpack(dropout(x, 0.4, generator=g))
    assert g.offset == (33 * 39 + 3) // 4
    keep = ref.ref_keep(77, 0, 33 * 39, 0.4).reshape(33, 39)
    expect = _dropout_ref(_np(xt.contiguous()), keep, 0.4, dtype)
    assert np.array_equal(_np(y), expect.astype(_np(y).dtype))
    assert dropout(x, 0.4, training=False) is x
    y2 = torch.from_dlpack(dropout(x, 0.4, seed=77))
    assert torch.equal(y, y2)


# ============================================================ gumbel-softmax
def _softmax_or_skip():
    """The softmax family is part of the package: an import failure is a failure, not a skip."""
    importlib.import_module("baracuda_dsl.ops.softmax.softmax")


def _gumbel_noise(shape_p, dtype, tau, seed, offset):
    """The plan's noise: RandomPlan gumbel with scale 1/τ over the axis-last layout."""
    out, _ = _draw("gumbel", shape_p, dtype, seed, offset, a=0.0, b=1.0 / tau)
    return out


def _gs_bound(x, g, tau, dt, ax):
    """The reference y_soft = softmax(x/τ + g) (float64, the plan's own noise g) along ``ax`` and,
    per element, the bound ``r`` on |ŷ − y|/y of the plan's y_soft, plus ``sum_lim``, the bound on
    |Σ ŷ − 1| per row.  GumbelSoftmaxPlan (ops/random/random.py) forms Z = x·(1/τ) + g in the
    compute dtype and stores it in x's dtype, then runs SoftmaxPlan on Z:

    * Z_i = z_i + Δ_i with |Δ_i| <= e_z·a_i, a_i = |x_i/τ| + |g_i|, e_z = eps(dt)/2 + 2u (the
      store, 1/τ and the fma): softmax(Z)_i / softmax(z)_i = exp(Δ_i − Σ_j q_j·Δ_j), at most
      expm1(e_z·(a_i + max_row a)) away from 1 — the conditioning of the softmax in its input;
    * softmax(Z) itself (tests/softmax check_softmax): eps(dt)/2 + u·(2g_i + 2W + d + 8)
      relative, g_i = |Z_i − max Z|, W = Σ_j p_j·g_j <= ln n, d = row_depth(n).
    The rows of softmax(Z) sum to 1 exactly, so Δ does not enter the row sum:
    |Σ ŷ − 1| <= eps(dt)/2 + u·(4W + d + 8) + n half subnormal spacings."""
    torch = _torch()
    xd = torch.movedim(x.double(), ax, -1)
    gd = torch.movedim(g.double(), ax, -1)
    n = xd.shape[-1]
    u, e = eps(CT[dt]), eps(dt) / 2
    z = xd / tau + gd
    soft = torch.softmax(z, -1)
    a = (xd / tau).abs() + gd.abs()
    ez = e + 2 * u
    pert = torch.expm1(ez * (a + a.amax(-1, keepdim=True)))
    gap = (z - z.amax(-1, keepdim=True)).abs() + 2 * ez * a.amax(-1, keepdim=True)
    w = (soft * gap).sum(-1, keepdim=True)
    d = row_depth(n)
    r = (1 + e + u * (2 * gap + 2 * w + d + 8)) * (1 + pert) - 1
    sum_lim = e + u * (4 * w.squeeze(-1) + d + 8) + n * TINY[dt] * e
    return torch.movedim(soft, -1, ax), torch.movedim(r, -1, ax), sum_lim


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", [((5, 33), -1), ((7, 1000), -1), ((4, 6, 3), 1),
                                        ((1, 1), -1)])
@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax(dtype, shape, axis, hard):
    _softmax_or_skip()
    torch = _torch()
    R = _R()
    tau = 0.7
    tdt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    y = poison(torch, shape, tdt)
    ys = poison(torch, shape, tdt)
    plan = R.GumbelSoftmaxPlan.select(R.GumbelSoftmaxDescriptor(shape, dtype, axis, tau, hard))
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    plan.run(R.GumbelSoftmaxArgs(x, y, 5, 11, ys), workspace=ws)
    ax = axis % len(shape)
    # reference: the same noise (axis-last layout), softmax in float64 (see _gs_bound)
    g = _gumbel_noise(tuple(n for d, n in enumerate(shape) if d != ax) + (shape[ax],), dtype,
                      tau, 5, 11)
    g = torch.movedim(g, -1, ax)
    soft, r, sum_lim = _gs_bound(x, g, tau, dtype, ax)
    rel = bounds(dtype)[0]
    _check(ys, soft, dtype, rel, (r - rel).clamp_min(0) * soft, "y_soft")
    dev = (ys.double().sum(dim=ax) - 1).abs()
    assert (dev <= sum_lim.reshape(dev.shape)).all(), ("row sums", dev.max().item())
    if hard:
        assert set(torch.unique(y.double()).tolist()) <= {0.0, 1.0}
        assert torch.equal(y.double().sum(dim=ax), torch.ones_like(y.double().sum(dim=ax)))
        am = torch.argmax(y.double(), dim=ax)
        # the chosen class is (one of) the largest of the plan's own soft sample (softmax is
        # monotonic, so argmax(z) has the largest y_soft even after rounding)
        top = ys.double().max(dim=ax).values
        picked = torch.gather(ys.double(), ax, am.unsqueeze(ax)).squeeze(ax)
        assert torch.equal(picked, top)
    else:
        _check(y, soft, dtype, rel, (r - rel).clamp_min(0) * soft, "y")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_gumbel_softmax_backward(dtype):
    """dx = (1/τ)·ŝ·(dy − Σ dy·ŝ) from the plan's y_soft ŝ: SoftmaxBackwardPlan, then a 1/τ scale
    pass, each rounded into the dtype (2 half-ulps).  Against the formula on ŝ itself (the
    backward plans alone): (d + 2)·u relative to m_i = ŝ_i·(|dy_i| + Σ|dy_j|·ŝ_j)/τ (the
    cancellation in dy_i − Σ).  Against float64 autograd on the exact soft sample s: ŝ_i is
    r_i·s_i off (_gs_bound), which moves dx_i by <= (r_i·s_i·(|dy_i| + A) + s_i·(1 + r_i)·B)/τ,
    A = Σ|dy_j|·s_j, B = Σ|dy_j|·r_j·s_j."""
    _softmax_or_skip()
    torch = _torch()
    R = _R()
    shape, tau = (6, 77), 0.5
    tdt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(4)
    x = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    ys = poison(torch, shape, tdt)
    y = poison(torch, shape, tdt)
    plan = R.GumbelSoftmaxPlan.select(R.GumbelSoftmaxDescriptor(shape, dtype, -1, tau, True))
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    plan.run(R.GumbelSoftmaxArgs(x, y, 9, 0, ys), workspace=ws)
    dy = torch.randn(shape, generator=gen, device="cuda").to(tdt)
    dx = poison(torch, shape, tdt)
    bw = R.GumbelSoftmaxBackwardPlan.select(R.GumbelSoftmaxBackwardDescriptor(shape, dtype, -1,
                                                                              tau))
    bws = torch.empty(max(bw.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    bw.run(R.GumbelSoftmaxBackwardArgs(dy, ys, dx), workspace=bws)
    g = _gumbel_noise(shape, dtype, tau, 9, 0).double()
    xd = x.double().requires_grad_(True)
    soft = torch.softmax(xd / tau + g, dim=-1)
    # straight-through hard: y_hard − soft.detach() + soft has the soft gradient
    hard = torch.zeros_like(soft).scatter_(-1, soft.argmax(-1, keepdim=True), 1.0)
    out = hard - soft.detach() + soft
    d = dy.double()
    (out * d).sum().backward()
    u = eps(CT[dtype])
    rel = bounds(dtype, compute=CT[dtype], terms=1, ulps=2)[0]
    dep = row_depth(shape[-1]) + 2
    # the backward plans alone, on the plan's own ŝ
    sh = ys.double()
    want = (sh * (d - (d * sh).sum(-1, keepdim=True))) / tau
    m_hat = sh * (d.abs() + (d.abs() * sh).sum(-1, keepdim=True)) / tau
    _check(dx, want, dtype, rel, dep * u * m_hat, "backward on y_soft")
    # the whole chain vs float64 autograd
    s = soft.detach()
    _, r, _ = _gs_bound(x, g, tau, dtype, 1)
    a = (d.abs() * s).sum(-1, keepdim=True)
    b = (d.abs() * r * s).sum(-1, keepdim=True)
    chain = (r * s * (d.abs() + a) + s * (1 + r) * b) / tau
    _check(dx, xd.grad, dtype, rel, chain + dep * u * (1 + r) * s * (d.abs() + a) / tau,
           "backward vs autograd")


def test_namespace_gumbel_softmax():
    _softmax_or_skip()
    torch = _torch()
    import array_api as xp
    from array_api import random as xr
    from array_api._random_extensions import gumbel_softmax

    x = xp.asarray(np.random.default_rng(0).standard_normal((9, 17)).astype(np.float32))
    g = xr.Generator(1)
    y = torch.from_dlpack(gumbel_softmax(x, tau=0.3, generator=g))
    assert g.offset == (9 * 17 + 3) // 4
    # rows of a softmax sum to 1 within eps/2 + u·(4W + d + 8), W <= ln 17 (_gs_bound)
    u = eps("float32")
    lim = bounds("float32")[0] + u * (4 * math.log(17) + row_depth(17) + 8)
    assert ((y.double().sum(-1) - 1).abs() <= lim).all(), y.double().sum(-1)
    yh = torch.from_dlpack(gumbel_softmax(x, hard=True, axis=0, generator=g))
    assert torch.equal(yh.sum(0), torch.ones(17, device="cuda"))
