"""The sm90a wgmma/TMA GEMM (``gemm_sm90``) on an H100 against float64 torch references: odd
sizes M, N, K in {1, 7, 127, 130, 1000, 4096} (padded leading dims so TMA takes them), all four
operand layouts, both tiles, alpha / beta, every epilogue, f32 output, strided c, a persistent
grid with more tiles than SMs, the 2-CTA cluster (TMA multicast) SKU, poisoned outputs and
split-K workspaces; every case asserts the plan picked ``gemm_sm90``.  Every element is checked
against a bound from the OUTPUT dtype and k (f32 accumulate; _gemm_helpers.gemm_tolerance).
Also checks that the cached, address-patched operand descriptors are bit for bit the driver's
fresh ``cuTensorMapEncodeTiled`` encodes."""

import itertools

import pytest
from _gemm_helpers import (assert_gemm_close, gemm_scale, padded_operand, poisoned_workspace,
                           ref_gemm, sm90_mods, tuned)

from tests._checks import poison_

pytestmark = pytest.mark.gpu

SIZES = (1, 7, 127, 130, 1000, 4096)
_mods = sm90_mods


def _run(m, n, k, dtype, *, a_t=False, b_t=False, alpha=1.0, beta=0.0, epilogue="identity",
         out_dtype=None, tile="wgmma128x128", c=None, seed=0):
    torch, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdt = getattr(torch, dtype)
    odt = tdt if out_dtype is None else getattr(torch, out_dtype)
    a = padded_operand(torch, m, k, tdt, gen, a_t)
    b = padded_operand(torch, k, n, tdt, gen, b_t)
    if c is None:
        c = torch.randn((m, n), generator=gen, device="cuda").to(odt)
    if beta == 0:
        poison_(torch, c)                        # poisoned: must not be read
    c_old = c.clone()
    bias = None
    if epilogue != "identity":
        bias = torch.randn((n,), generator=gen, device="cuda").to(odt)
    plan = GemmPlan.select(GemmDescriptor(m, n, k, dtype, out_dtype=out_dtype, alpha=alpha,
                                          beta=beta, epilogue=epilogue), tuned(tile=tile))
    args = GemmArgs(a, b, c, bias)
    tmpl, knobs = plan.kernel_for(args)
    assert tmpl.name == "gemm_sm90", (m, n, k, knobs)
    plan.run(args, workspace=poisoned_workspace(torch, plan))
    torch.cuda.synchronize()
    ref = ref_gemm(torch, a, b, c_old, bias, alpha, beta, epilogue)
    assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c_old, bias, alpha, beta),
                      epilogue=epilogue, extra_terms=plan.splits,
                      ctx=(m, n, k, dtype, out_dtype, epilogue, knobs))
    return knobs


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_odd_sizes(dtype):
    """Every (M, N, K) of SIZES^3 whose product stays <= 4096·4096·1000, both tiles."""
    i = 0
    for m, n, k in itertools.product(SIZES, SIZES, SIZES):
        if m * n * k > 4096 * 4096 * 1000:
            continue
        tile = ("wgmma128x128", "wgmma128x256")[i % 2]
        i += 1
        _run(m, n, k, dtype, tile=tile, seed=i)


@pytest.mark.parametrize("tile", ["wgmma128x128", "wgmma128x256"])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
def test_layouts(tile, a_t, b_t):
    for (m, n, k), dt in zip(((130, 1000, 127), (1000, 130, 4096), (7, 4096, 130),
                              (4096, 7, 1)), ("bfloat16", "float16", "bfloat16", "float16")):
        kn = _run(m, n, k, dt, a_t=a_t, b_t=b_t, tile=tile)
        if k > 1:                                # k = 1: both majors fit; k-major is taken
            assert kn.a_major == ("m" if a_t else "k")
            assert kn.b_major == ("k" if b_t else "n")


@pytest.mark.parametrize("epilogue", ["identity", "bias", "bias_relu", "bias_gelu",
                                      "bias_silu"])
@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_epilogues(epilogue, out_dtype):
    _run(130, 1000, 127, "bfloat16", epilogue=epilogue, out_dtype=out_dtype, beta=0.5,
         alpha=-1.25, b_t=True)
    _run(1000, 136, 64, "float16", epilogue=epilogue, out_dtype=out_dtype,
         tile="wgmma128x256")


def test_alpha_beta():
    for alpha, beta in ((0.5, -1.5), (-2.0, 1.0), (0.0, 1.0), (1.0, 0.0)):
        _run(257, 300, 200, "bfloat16", alpha=alpha, beta=beta, a_t=True)
        _run(257, 300, 200, "float16", alpha=alpha, beta=beta, b_t=True,
             tile="wgmma128x256")


def test_strided_and_column_major_c():
    torch, *_ = _mods()
    c = torch.empty((160, 2 * 136), device="cuda", dtype=torch.float32)[:, ::2]
    _run(160, 136, 64, "bfloat16", out_dtype="float32", c=c)
    ct = torch.randn((136, 160), device="cuda").to(torch.bfloat16).t()
    _run(160, 136, 64, "bfloat16", c=ct, alpha=2.0, beta=1.0)


@pytest.mark.parametrize("tile", ["wgmma128x128", "wgmma128x256c2"])
def test_epilogue_vector_and_scalar_paths(tile):
    """The staged epilogue's 16-byte vector path (aligned row-major c / bias, full segments) and
    its element-wise fallback: rows of a stride that breaks 16-byte alignment, a c base off by
    one element, n not a multiple of 16 (partial last segment), beta reading c both ways; the
    padding next to the strided c rows must stay untouched."""
    torch, *_ = _mods()
    for dt, odt in (("bfloat16", None), ("float16", "float32")):
        tdt = getattr(torch, dt if odt is None else odt)
        buf = torch.full((200, 264 + 3), float("nan"), device="cuda", dtype=tdt)
        c = buf[:, :264]                                         # row stride 267: scalar path
        c.copy_(torch.randn((200, 264), device="cuda"))
        _run(200, 264, 96, dt, out_dtype=odt, c=c, beta=0.5, epilogue="bias_relu", tile=tile)
        assert torch.isnan(buf[:, 264:].float()).all()
        flat = torch.empty(200 * 264 + 1, device="cuda", dtype=tdt)
        c = flat[1:].view(200, 264)                              # base off by one element
        _run(200, 264, 96, dt, out_dtype=odt, c=c, epilogue="bias_gelu", tile=tile, seed=1)
        _run(333, 1040, 160, dt, out_dtype=odt, beta=-1.0, epilogue="bias_silu", tile=tile,
             seed=2)                                             # full vectors, beta
        _run(129, 1000 + 7, 64, dt, out_dtype=odt, epilogue="bias", tile=tile, seed=3)


def test_default_selection_and_persistence():
    """Default picks on an H100 (128x256 for large problems, 128x128 otherwise), and grids with
    many more tiles than SMs (the persistent loop)."""
    torch, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    big = GemmPlan.select(GemmDescriptor(4096, 4096, 1024, "bfloat16"))
    assert big.sku().template == "gemm_sm90" and dict(big.sku().knobs)["tile"] == "128x256"
    _run(4096, 4096, 1024, "bfloat16", tile=None, b_t=True)            # 512 tiles of 128x256
    _run(2048, 4096, 512, "float16", tile="wgmma128x128", epilogue="bias_silu")  # 512 tiles
    # decode shapes keep the mma.sync decode tile by default
    dec = GemmPlan.select(GemmDescriptor(16, 4096, 4096, "bfloat16"))
    assert dec.sku().template == "gemm_mma"


@pytest.mark.parametrize("b_t", [False, True])
def test_cluster_multicast(b_t):
    """The 2-CTA cluster SKU (b multicast over a tile pair along m): odd tile-row counts (the
    second CTA of the last pair is past m), odd n / k, both b majors, epilogues, persistence."""
    for i, (m, n, k) in enumerate(((130, 1000, 127), (257, 300, 4096), (1000, 4096, 130),
                                   (4096, 7, 1000), (1, 130, 64), (4096, 4096, 512))):
        kn = _run(m, n, k, ("bfloat16", "float16")[i % 2], b_t=b_t, tile="wgmma128x256c2",
                  epilogue=("identity", "bias_gelu")[i % 2], beta=(0.0, 0.5)[i % 2], seed=i)
        assert kn.cluster == 2 and kn.tile == "128x256"
    # an m-major a has no cluster SKU: the 1-CTA 128x256 SKU serves it
    assert _run(300, 200, 100, "bfloat16", a_t=True, tile="wgmma128x256c2").cluster == 1


#: operand layouts of the kernel's SKUs: dtype, k-major, rows, k, ld, tile rows, block k, mcast
DESCRIPTOR_CASES = [
    ("bf16", True, 1000, 4096, 4104, 128, 64, 1),
    ("f16", True, 4096, 14336, 14336, 256, 64, 1),
    ("bf16", False, 1000, 127, 1000, 128, 64, 1),
    ("f16", False, 7, 4096, 8, 256, 64, 1),
    ("bf16", True, 1, 1, 8, 128, 64, 1),
    ("bf16", True, 3, 8, 2 ** 33 + 8, 128, 64, 1),     # a leading dim beyond 32-bit strides
    ("bf16", True, 14336, 4096, 4096, 256, 64, 2),     # the cluster SKUs' multicast b
    ("f16", False, 4096, 1000, 4096, 256, 64, 2),
    ("bf16", True, 128, 4096, 4096, 64, 64, 1),        # the narrow tile's b
    ("e4m3", True, 1000, 4096, 4096, 128, 128, 1),
    ("e5m2", True, 14336, 4112, 4112, 256, 128, 1),
]


def test_descriptors_are_driver_encodes():
    """The probe finds where the driver keeps the base address (one plain u64), and every
    cached descriptor with its address patched in equals a fresh cuTensorMapEncodeTiled of the
    same layout at that address, bit for bit — for each operand layout of the kernel and
    several base addresses; the plans' process-wide cache agrees."""
    torch, *_ = _mods()
    from baracuda_dsl.ops.gemm.gemm_sm90_launch import operand_layout
    from baracuda_dsl.ops.gemm.tensor_maps import TENSOR_MAPS, TensorMapCache, driver_encode

    x = torch.empty((1 << 20,), device="cuda", dtype=torch.uint8)    # a current context
    cache = TensorMapCache()
    assert cache.address_offset() is not None
    base = x.data_ptr()
    addrs = (base, base + 16, base + 4096, base + (1 << 19), 0x7F00_0000_0000, base)
    for case in DESCRIPTOR_CASES:
        lay = operand_layout(*case)
        for a in addrs:
            assert cache.descriptor(lay, a) == driver_encode(lay, a), (case, hex(a))
        assert cache.get(lay).patched, case
    assert TENSOR_MAPS.address_offset() == cache.address_offset()


@pytest.mark.parametrize("splits", [None, 2, 3, 4])
def test_wgmma_split_k(splits):
    """Split-K on the persistent wgmma kernel ((tile, split) work units, f32 partials in the
    workspace, gemm_splitk_reduce epilogue): the default small-grid route (m = 128, n = 4096)
    and forced splits with k residues, every epilogue, beta, strided c; deterministic."""
    torch, GemmArgs, GemmDescriptor, GemmPlan = _mods()
    cases = [(64, 4096, 4096, "bias_gelu", 0.0), (200, 520, 1000 + 8, "bias_relu", 0.5),
             (17, 136, 64 * 7 + 8, "identity", -1.0), (300, 264, 2048, "bias_silu", 0.0)]
    for i, (m, n, k, epi, beta) in enumerate(cases):
        for dt in ("bfloat16", "float16"):
            gen = torch.Generator(device="cuda").manual_seed(i)
            tdt = getattr(torch, dt)
            a = padded_operand(torch, m, k, tdt, gen, False)
            b = padded_operand(torch, k, n, tdt, gen, True)
            cbuf = torch.randn((m, n + 8), generator=gen, device="cuda").to(tdt)
            c = cbuf[:, :n]
            if beta == 0:
                poison_(torch, c)
            c_old = c.clone()
            bias = torch.randn((n,), generator=gen, device="cuda").to(tdt) \
                if epi != "identity" else None
            desc = GemmDescriptor(m, n, k, dt, beta=beta, epilogue=epi)
            if splits is None:
                if (m, n, k) != (64, 4096, 4096):
                    continue
                plan = GemmPlan.select(desc)
                assert plan.splits == 4
            else:
                tile = "wgmma128x64" if i % 2 else "wgmma128x128"
                plan = GemmPlan.select(desc, tuned(tile=tile, splits=splits))
                assert plan.splits == splits
            args = GemmArgs(a, b, c, bias)
            assert plan.kernel_for(args)[0].name == "gemm_sm90"
            ws = poisoned_workspace(torch, plan)        # f32 partials: NaN until written
            plan.run(args, workspace=ws)
            first = c.clone()
            ref = ref_gemm(torch, a, b, c_old, bias, 1.0, beta, epi)
            assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c_old, bias, 1.0, beta),
                              epilogue=epi, extra_terms=plan.splits,
                              ctx=(m, n, k, dt, epi, splits))
            c.copy_(c_old)
            ws.fill_(0xFF)                              # re-poisoned: no stale partial reused
            plan.run(args, workspace=ws)
            assert torch.equal(c, first)                    # bit-identical rerun


def test_narrow_tile():
    """The 128x64 wgmma tile (small grids with m > 64: the default under one wave of 128x128
    tiles): default pick, odd sizes, every epilogue, beta, f32 output; other operand majors fall
    back to 128x128."""
    torch, *_ = _mods()
    kn = _run(128, 4096, 4096, "bfloat16", b_t=True, tile=None, epilogue="bias_gelu")
    assert kn.tile == "128x64"
    for i, (m, n, k) in enumerate(((65, 72, 64), (200, 520, 1000), (300, 264, 2048),
                                   (1000, 1000, 127))):
        epi = ("identity", "bias", "bias_relu", "bias_silu")[i]
        kn = _run(m, n, k, ("bfloat16", "float16")[i % 2], b_t=True, tile="wgmma128x64",
                  epilogue=epi, beta=0.5 if i % 2 else 0.0,
                  out_dtype="float32" if i == 2 else None, seed=i)
        assert kn.tile == "128x64", kn
    kn = _run(300, 264, 256, "bfloat16", tile="wgmma128x64")         # n-major b: 128x128
    assert kn.tile == "128x128"
