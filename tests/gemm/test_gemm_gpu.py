"""GemmPlan on the GPU against float64 torch references: odd sizes on both kernels (mma.sync and
SIMT), all four operand layouts through transposed views, alpha / beta, every epilogue, f32 output
of half inputs, misaligned operands (SIMT fallback), empty problems, k = 0, strided c, poisoned
outputs and NaN-poisoned split-K workspaces.  Every element is checked against a bound derived
from the OUTPUT dtype and k (_gemm_helpers.gemm_tolerance: one rounding to the output dtype
relative to the result, k + epilogue rounded operations in the compute precision — float32
accumulate for half / float32 inputs, float64 for float64 — relative to |alpha|·|a|@|b| +
|beta·c| + |bias|), and so is the norm."""

import pytest
from _gemm_helpers import assert_gemm_close, gemm_scale, poisoned_workspace, tuned
from _gemm_helpers import ref_gemm as _ref
from _gpu_helpers import bytes_equal

from tests._checks import assert_equal, poison, poison_

pytestmark = pytest.mark.gpu


def _compute(dtype):
    """The accumulate / epilogue precision of GemmPlan for input ``dtype``."""
    return "float64" if dtype == "float64" else "float32"


def _mods():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    return torch, GemmArgs, GemmDescriptor, GemmPlan


def _run(m, n, k, dtype, *, a_t=False, b_t=False, alpha=1.0, beta=0.0, epilogue="identity",
         out_dtype=None, tile=None, a=None, c=None, gen_seed=0):
    """Build operands (a transposed view when a_t / b_t), run, compare; returns the kernel
    template name the plan used."""
    torch, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    gen = torch.Generator(device="cuda").manual_seed(gen_seed)
    tdt = getattr(torch, dtype)
    odt = tdt if out_dtype is None else getattr(torch, out_dtype)
    if a is None:
        a = torch.randn((k, m) if a_t else (m, k), generator=gen, device="cuda").to(tdt)
        a = a.t() if a_t else a
    b = torch.randn((n, k) if b_t else (k, n), generator=gen, device="cuda").to(tdt)
    b = b.t() if b_t else b
    if c is None:
        c = torch.randn((m, n), generator=gen, device="cuda").to(odt)
    if beta == 0:
        poison_(torch, c)                           # poisoned: must not be read
    c_old = c.clone()
    bias = None
    if epilogue != "identity":
        bias = torch.randn((n,), generator=gen, device="cuda").to(odt)
    plan = GemmPlan.select(GemmDescriptor(m, n, k, dtype, out_dtype=out_dtype, alpha=alpha,
                                          beta=beta, epilogue=epilogue), tuned(tile=tile))
    args = GemmArgs(a, b, c, bias)
    name = plan.kernel_for(args)[0].name
    ws = poisoned_workspace(torch, plan)            # split-K partials: NaN until written
    plan.run(args, workspace=ws)
    torch.cuda.synchronize()
    ref = _ref(torch, a, b, c_old, bias, alpha, beta, epilogue)
    assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c_old, bias, alpha, beta),
                      compute=_compute(dtype), epilogue=epilogue, extra_terms=plan.splits,
                      ctx=(m, n, k, dtype, out_dtype, name, epilogue))
    return name


SIZES = [1, 7, 17, 64, 127, 130, 1000]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_odd_sizes(dtype):
    names = set()
    for m in SIZES:
        for n, k in ((64, 1000), (1000, 64), (136, 8), (7, 17), (130, 1), (17, 127)):
            names.add(_run(m, n, k, dtype))
    # on sm90a the larger grids take the wgmma kernel (gemm_sm90), tested in test_gemm_sm90_gpu
    assert {"gemm_mma", "gemm_simt"} <= names <= {"gemm_mma", "gemm_simt", "gemm_sm90"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_simt_odd_sizes(dtype):
    for m, n, k in ((1, 1, 1), (7, 17, 1), (1, 1000, 130), (127, 130, 64), (1000, 7, 17),
                    (64, 64, 1000), (130, 127, 127)):
        assert _run(m, n, k, dtype) == "gemm_simt"


@pytest.mark.parametrize("tile", ["64x64", "128x128"])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
def test_mma_layouts(tile, a_t, b_t):
    for m, n, k in ((136, 72, 200), (8, 264, 520), (264, 8, 40)):
        assert _run(m, n, k, "bfloat16", a_t=a_t, b_t=b_t, tile=tile) == "gemm_mma"
    _run(257, 130, 96, "float16", a_t=a_t, b_t=b_t, tile=tile)   # maybe SIMT for odd m / n


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_alpha_beta_and_transposes(dtype):
    for a_t in (False, True):
        for b_t in (False, True):
            _run(200, 136, 72, dtype, a_t=a_t, b_t=b_t, alpha=0.5, beta=-1.5)
    _run(33, 40, 16, dtype, alpha=-2.0, beta=1.0)


@pytest.mark.parametrize("epilogue", ["identity", "bias", "bias_relu", "bias_gelu",
                                      "bias_silu"])
def test_epilogues(epilogue):
    # the mma.sync kernel's epilogues (on sm90a these grids would default to the wgmma kernel)
    assert _run(130, 136, 96, "bfloat16", epilogue=epilogue, beta=0.5,
                tile="64x64") == "gemm_mma"
    assert _run(127, 72, 64, "float16", epilogue=epilogue, out_dtype="float32",
                tile="64x64") == "gemm_mma"
    _run(65, 70, 33, "float64", epilogue=epilogue, alpha=0.75, beta=0.25)
    _run(65, 70, 33, "float32", epilogue=epilogue)


def test_out_f32_and_strided_c():
    torch, *_ = _mods()
    c = torch.empty((160, 2 * 136), device="cuda", dtype=torch.float32)[:, ::2]
    assert _run(160, 136, 64, "bfloat16", out_dtype="float32", c=c, tile="64x64") == "gemm_mma"
    ct = torch.randn((136, 160), device="cuda").to(torch.bfloat16).t()   # column-major c
    assert _run(160, 136, 64, "bfloat16", c=ct, alpha=2.0, beta=1.0,
                tile="64x64") == "gemm_mma"
    c64 = torch.randn((50, 3 * 40), device="cuda", dtype=torch.float64)[:, ::3]
    _run(50, 40, 30, "float64", c=c64, beta=2.0)
    _run(50, 40, 30, "float64", out_dtype="float32")


def test_misaligned_falls_back_to_simt():
    torch, *_ = _mods()
    m, n, k = 130, 72, 64
    buf = torch.randn(m * k + 1, device="cuda").to(torch.bfloat16)
    a = buf[1:].view(m, k)                              # base pointer off by 2 bytes
    assert _run(m, n, k, "bfloat16", a=a) == "gemm_simt"
    wide = torch.randn((m, k + 3), device="cuda").to(torch.float16)[:, :k]   # ld % 8 != 0
    assert _run(m, n, k, "float16", a=wide, epilogue="bias_relu") == "gemm_simt"
    assert _run(m, n, k, "bfloat16", tile="simt") == "gemm_simt"


def test_empty_and_k0():
    torch, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    for m, n in ((0, 5), (5, 0), (0, 0)):
        buf = poison(torch, (5, 5), torch.float32)
        c = buf[:m, :n]                                 # a zero-size view of a poisoned buffer
        GemmPlan.select(GemmDescriptor(m, n, 4, "float32")).run(
            GemmArgs(torch.ones((m, 4), device="cuda"), torch.ones((4, n), device="cuda"), c))
        torch.cuda.synchronize()
        assert torch.isnan(buf).all(), (m, n)           # nothing written
    for dtype in ("bfloat16", "float32", "float64"):
        tdt = getattr(torch, dtype)
        c = torch.randn((9, 17), device="cuda").to(tdt)
        old = c.double().clone()
        bias = torch.randn((17,), device="cuda").to(tdt)
        plan = GemmPlan.select(GemmDescriptor(9, 17, 0, dtype, beta=-0.5, epilogue="bias_relu"))
        plan.run(GemmArgs(torch.empty((9, 0), device="cuda", dtype=tdt),
                          torch.empty((0, 17), device="cuda", dtype=tdt), c, bias))
        ref = torch.relu(-0.5 * old + bias.double())
        # k = 0: only the epilogue's rounded operations, relative to |beta·c| + |bias|
        assert_gemm_close(c, ref, 0, scale=(0.5 * old).abs() + bias.double().abs(),
                          compute=_compute(dtype), epilogue="bias_relu", ctx=(dtype, "k=0"))
        c2 = poison(torch, (9, 17), tdt)
        GemmPlan.select(GemmDescriptor(9, 17, 0, dtype)).run(
            GemmArgs(torch.empty((9, 0), device="cuda", dtype=tdt),
                     torch.empty((0, 17), device="cuda", dtype=tdt), c2))
        torch.cuda.synchronize()
        # alpha · (empty sum = +0): exactly +0 everywhere
        assert_equal(c2, torch.zeros((9, 17), dtype=torch.float64), what=f"{dtype} k=0 beta=0")


def test_large_and_decode_defaults():
    # default tiles: 128x128 (>= 96 CTAs), 64x64, 16x32 (m <= 16)
    assert _run(2048, 1024, 512, "bfloat16", epilogue="bias_gelu",
                out_dtype="float32", tile="128x128") == "gemm_mma"
    # 32 tiles of 128x128, k >= 1024: split wgmma on sm90a, mma.sync 64x64 elsewhere
    assert _run(4096, 128, 1024, "float16", b_t=True) in ("gemm_mma", "gemm_sm90")
    for m in (1, 5, 16):
        for b_t in (False, True):
            assert _run(m, 4096, 1024, "bfloat16", b_t=b_t, beta=0.5) == "gemm_mma"
    assert _run(8, 520, 264, "float16", a_t=True, tile="16x32") == "gemm_mma"  # 64x64 serves


# ------------------------------------------------------------------------------ split-K
EPILOGUES = ["identity", "bias", "bias_relu", "bias_gelu", "bias_silu"]


def _run_split(torch, m, n, k, dtype, splits, *, epilogue="identity", beta=0.0, alpha=1.0,
               out_dtype=None, b_t=False, c_layout="row", seed=0):
    """Run a split-K GemmPlan twice (bitwise-identical results required); return c."""
    _, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = getattr(torch, dtype)
    odt = tdt if out_dtype is None else getattr(torch, out_dtype)
    a = torch.randn((m, k), generator=gen, device="cuda").to(tdt)
    b = torch.randn((n, k) if b_t else (k, n), generator=gen, device="cuda").to(tdt)
    b = b.t() if b_t else b
    if c_layout == "row":
        c = torch.empty((m, n), device="cuda", dtype=odt)
    elif c_layout == "strided":
        c = torch.empty((m, 2 * n + 1), device="cuda", dtype=odt)[:, 1::2]
    else:
        c = torch.empty((n, m), device="cuda", dtype=odt).t()
    c.copy_(torch.randn((m, n), generator=gen, device="cuda"))
    bias = None
    if epilogue != "identity":
        bias = torch.randn((n,), generator=gen, device="cuda").to(odt)
    # forced splits test the mma.sync route (on sm90a m > 16 would default to wgmma)
    tile = "64x64" if splits is not None and m > 16 else None
    plan = GemmPlan.select(GemmDescriptor(m, n, k, dtype, out_dtype=out_dtype, alpha=alpha,
                                          beta=beta, epilogue=epilogue),
                           tuned(splits=splits, tile=tile))
    if splits is not None:
        assert plan.splits == splits
    c0 = c.clone()
    outs = []
    for _ in range(2):
        c.copy_(c0)
        if beta == 0:
            poison_(torch, c)                           # poisoned: must not be read
        ws = poisoned_workspace(torch, plan, 1)         # partials: NaN until written
        args = GemmArgs(a, b, c, bias)
        # the default small-grid route on sm90a (m > 16) is the split wgmma kernel
        assert plan.kernel_for(args)[0].name == ("gemm_sm90" if plan.sku().template ==
                                                 "gemm_sm90" else "gemm_mma")
        plan.run(args, workspace=ws)
        torch.cuda.synchronize()
        outs.append(c.clone())
    assert bytes_equal(torch, outs[0], outs[1]), "split-K is not deterministic"
    ref = _ref(torch, a, b, c0, bias, alpha, beta, epilogue)
    assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c0, bias, alpha, beta),
                      compute=_compute(dtype), epilogue=epilogue, extra_terms=plan.splits,
                      ctx=(m, n, k, dtype, out_dtype, splits, epilogue, c_layout))
    return plan


@pytest.mark.parametrize("splits", [2, 3, 8])
def test_split_k_forced(splits):
    torch, *_ = _mods()
    for m in (1, 16, 128):
        for k in (64 * splits + 8, 4096):
            for i, epi in enumerate(EPILOGUES):
                _run_split(torch, m, 136, k, "bfloat16", splits, epilogue=epi,
                           beta=0.0 if i % 2 else -0.75, alpha=1.25 if i == 3 else 1.0,
                           c_layout=("row", "strided", "col")[i % 3], seed=i)
    # f16, f32 output, k-major b, n not a multiple of 4 (padded workspace rows)
    _run_split(torch, 16, 90, 1000, "float16", splits, out_dtype="float32", b_t=True,
               epilogue="bias_gelu", beta=0.5)
    _run_split(torch, 33, 90, 64 * splits + 8, "float16", splits, b_t=True)


def test_split_k_default_decode():
    torch, *_ = _mods()
    for m in (1, 16):
        p = _run_split(torch, m, 4096, 4096, "bfloat16", None, epilogue="bias", beta=0.5)
        assert p.splits > 1 or p.sku().arch.value != "sm90a"
    p = _run_split(torch, 64, 1024, 4104, "bfloat16", None, epilogue="bias_silu")
    assert p.splits > 1
