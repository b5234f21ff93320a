"""The sm90a wgmma/TMA GEMM without a GPU: SKU space, GemmPlan routing on sm90a, the ``tmap``
parameter kind (PTX parsing, ABI check, ArgPack slots), the launch arguments with the operand
descriptors from a stand-in encoder, the operands' descriptor layouts against the TMA atoms the
DSL builds for the kernel (fields of its host-side descriptor, folded from its lowered host IR),
and the compiled kernel's PTX / SASS."""

import ctypes
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import bfloat16, float16, float32
from baracuda_dsl.abi import ArgPack, check_abi, params, ptx_entry_params
from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
from baracuda_dsl.ops.gemm.gemm_sm90_launch import operand_layout
from baracuda_dsl.ops.gemm.specs import gemm_sm90 as spec90
from baracuda_dsl.ops.gemm.tensor_maps import TensorMapLayout
from baracuda_dsl.tensor import TensorView
from _gemm_helpers import tuned

SM90 = bd.PlanPreference(arch=bd.ArchSku.SM90A)
SM80 = bd.PlanPreference(arch=bd.ArchSku.SM80)
BASE = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tv(shape, strides, dtype, off=0):
    return TensorView(BASE + off, shape, strides, dtype, 0)


def row(m, k, dt, ld=None, off=0):
    return tv((m, k), (k if ld is None else ld, 1), dt, off)


def col(m, k, dt, ld=None, off=0):
    return tv((m, k), (1, m if ld is None else ld), dt, off)


# ------------------------------------------------------------------------------ SKU space
def test_sku_space():
    from baracuda_dsl.ops import get_template

    t = get_template("gemm_sm90")
    assert t.family == "gemm"
    assert len(t.skus("sm90a")) == 2 * 2 * 2 * 2 * 2 + 2 * 2 * 2 + 3 * 3 * 2 + 2 * 2 == 62
    narrow = [dict(k) for k in t.skus("sm90a") if dict(k)["tile"] == spec90.NARROW_TILE]
    assert len(narrow) == 4 and all(k["a_major"] == k["b_major"] == "k" for k in narrow)
    fp8 = [dict(k) for k in t.skus("sm90a") if dict(k)["dtype"] in ("e4m3", "e5m2")]
    assert len(fp8) == 18 and all(k["a_major"] == k["b_major"] == "k" for k in fp8)
    assert {(k["dtype"], k["b"]) for k in fp8} == set(spec90.FP8_PAIRS)
    assert spec90.block_k("128x256", "e4m3") == 128 and spec90.block_k("128x256", "bf16") == 64
    assert t.skus("sm80") == () and t.skus("sm89") == ()
    assert {dict(k)["tile"] for k in t.skus("sm90a")} == {"128x128", "128x256", "128x64"}
    c2 = [dict(k) for k in t.skus("sm90a") if dict(k)["cluster"] == 2]
    assert len(c2) == 8 and {(k["tile"], k["a_major"]) for k in c2} == {("128x256", "k")}
    assert spec90.GEMM_SM90.geometry(spec90.Sm90Knobs(**c2[0])).cluster == 2
    for tile in spec90.TILES:
        assert spec90.smem_bytes(tile) <= 227 * 1024
    assert spec90.GEMM_SM90.geometry(spec90.Sm90Knobs(**c2[0])).threads == 384
    assert spec90.Sm90Knobs(**fp8[0]).b_dtype == fp8[0]["b"]
    assert spec90.Sm90Knobs(**c2[0]).b_dtype == c2[0]["dtype"]


# ------------------------------------------------------------------------------ routing
def test_sm90_selection():
    big = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), SM90)
    assert big.sku().template == "gemm_sm90" and dict(big.sku().knobs)["tile"] == "128x256"
    mid = GemmPlan.select(GemmDescriptor(1000, 2200, 512, "f16", epilogue="bias_gelu"), SM90)
    assert mid.sku().template == "gemm_sm90" and dict(mid.sku().knobs)["tile"] == "128x128"
    assert mid.sku().epilogue == "bias_gelu"          # 144 tiles of 128x128, 72 of 128x256
    # under one wave of 128x128 tiles (m > 64): the narrow 128x64 tile
    nar = GemmPlan.select(GemmDescriptor(1000, 1000, 512, "f16"), SM90)
    assert nar.sku().template == "gemm_sm90" and dict(nar.sku().knobs)["tile"] == "128x64"
    # decode shapes stay on the mma.sync decode tile; f32 / f64 on SIMT
    dec = GemmPlan.select(GemmDescriptor(16, 4096, 4096, "bf16"), SM90)
    assert dec.sku().template == "gemm_mma" and dict(dec.sku().knobs)["tile"] == "16x32"
    assert GemmPlan.select(GemmDescriptor(17, 8192, 4096, "bf16"),
                           SM90).sku().template == "gemm_sm90"
    # m <= 64 under SM90_MIN_TILES 128x128 tiles (m = 64, n = 4096: 32) split k on wgmma
    small = GemmPlan.select(GemmDescriptor(64, 4096, 4096, "bf16"), SM90)
    assert small.sku().template == "gemm_sm90" and dict(small.sku().knobs)["tile"] == "128x128"
    assert small.splits == 4
    small = GemmPlan.select(GemmDescriptor(64, 4096, 512, "bf16"), SM90)       # k too short
    assert small.sku().template == "gemm_mma" and dict(small.sku().knobs)["tile"] == "64x64"
    assert GemmPlan.select(GemmDescriptor(64, 64, 64, "f32"), SM90).sku().template == "gemm_simt"
    # other arches never see the wgmma kernel
    assert GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"),
                           SM80).sku().template == "gemm_mma"
    # tile overrides
    f = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), tuned(SM90, tile="wgmma128x128"))
    assert dict(f.sku().knobs)["tile"] == "128x128" and f.sku().template == "gemm_sm90"
    g = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), tuned(SM90, tile="128x128"))
    assert g.sku().template == "gemm_mma"
    c2 = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"),
                         tuned(SM90, tile="wgmma128x256c2"))
    assert dict(c2.sku().knobs)["cluster"] == 2 and dict(c2.sku().knobs)["tile"] == "128x256"
    a, b, c = row(4096, 4096, bfloat16), col(4096, 4096, bfloat16), row(4096, 4096, bfloat16)
    assert c2.kernel_for(GemmArgs(a, b, c))[1].cluster == 2
    # no m-major cluster SKU: the 1-CTA 128x256 SKU serves it
    kn = c2.kernel_for(GemmArgs(col(4096, 4096, bfloat16), b, c))[1]
    assert kn.cluster == 1 and kn.tile == "128x256" and kn.a_major == "m"
    assert dict(big.sku().knobs)["cluster"] == 2          # the default for >= 132 128x256 tiles
    one = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"),
                          tuned(SM90, tile="wgmma128x256"))
    assert dict(one.sku().knobs)["cluster"] == 1
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(64, 64, 64, "bf16"), tuned(SM80, tile="wgmma128x256"))
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(64, 64, 64, "f32"), tuned(SM90, tile="wgmma128x128"))


@pytest.mark.parametrize("am", ["k", "m"])
@pytest.mark.parametrize("bm", ["k", "n"])
def test_layout_routing(am, bm):
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    m, n, k = 1030, 1000, 127         # no multiple of 8 anywhere: TMA zero-fills
    for dt in (bfloat16, float16):
        for out in (None, float32):
            p = GemmPlan.select(GemmDescriptor(m, n, k, dt, out_dtype=out), SM90)
            o = p.desc.out_dtype
            a = row(m, k, dt, ld=128) if am == "k" else col(m, k, dt, ld=1032)
            b = col(k, n, dt, ld=128) if bm == "k" else row(k, n, dt, ld=1000)
            t, kn = p.kernel_for(GemmArgs(a, b, row(m, n, o)))
            assert t.name == "gemm_sm90", kn
            # under one wave of 128x128 tiles: the narrow tile where it exists (k-major a and b)
            want = "128x64" if (am, bm) == ("k", "k") else "128x128"
            assert kn.a_major == am and kn.b_major == bm and kn.tile == want
            assert freeze_knobs(kn) in get_template("gemm_sm90").skus("sm90a")
            # c with any strides stays on the wgmma kernel
            assert p.kernel_for(GemmArgs(a, b, col(m, n, o)))[0].name == "gemm_sm90"


def test_tma_fallbacks():
    m, n, k = 64, 48, 40
    p = GemmPlan.select(GemmDescriptor(m, n, k, "f16"), tuned(SM90, tile="wgmma128x128"))
    b, c = row(k, n, float16), row(m, n, float16)

    def route(a, bb=b):
        return p.kernel_for(GemmArgs(a, bb, c))[0].name

    assert route(row(m, k, float16)) == "gemm_sm90"
    assert route(row(m, k, float16, ld=44)) == "gemm_simt"            # ld % 8: no TMA, no mma
    assert route(row(m, k, float16, off=8)) == "gemm_simt"            # base % 16
    assert route(tv((m, k), (2 * k, 2), float16)) == "gemm_simt"      # no unit stride
    assert route(tv((m, k), (-k, 1), float16, off=16 * k * m)) == "gemm_simt"
    assert route(tv((m, k), (0, 1), float16)) == "gemm_mma"           # broadcast rows: no TMA
    # contiguous extent not a multiple of 8: TMA takes it (the mma.sync kernel would not)
    q = GemmPlan.select(GemmDescriptor(m, n, 36, "f16"), tuned(SM90, tile="wgmma128x128"))
    assert q.kernel_for(GemmArgs(row(m, 36, float16, ld=40), row(36, n, float16),
                                 c))[0].name == "gemm_sm90"
    # m = 17 with a one-column b: ld is irrelevant
    r = GemmPlan.select(GemmDescriptor(17, 1, k, "bf16"), tuned(SM90, tile="wgmma128x256"))
    t, kn = r.kernel_for(GemmArgs(row(17, k, bfloat16), tv((k, 1), (1, 5), bfloat16),
                                  row(17, 1, bfloat16)))
    assert t.name == "gemm_sm90"
    # k = 0 runs on SIMT
    z = GemmPlan.select(GemmDescriptor(m, n, 0, "bf16"), tuned(SM90, tile="wgmma128x128"))
    assert z.kernel_for(GemmArgs(row(m, 0, bfloat16), row(0, n, bfloat16),
                                 row(m, n, bfloat16)))[0].name == "gemm_simt"


def test_gpu_test_cases_route_to_sm90():
    """The operands tests/gemm/test_gemm_sm90_gpu.py builds (padded leading dims, transposed views)
    all take the wgmma kernel, for every size of its grid."""
    import itertools

    def operand(rows, cols, dt, transposed):
        if transposed:
            return tv((rows, cols), (1, -(-max(rows, 1) // 8) * 8), dt)
        return tv((rows, cols), (-(-max(cols, 1) // 8) * 8, 1), dt)

    sizes = (1, 7, 127, 130, 1000, 4096)
    for i, (m, n, k) in enumerate(itertools.product(sizes, sizes, sizes)):
        tile = ("wgmma128x128", "wgmma128x256")[i % 2]
        p = GemmPlan.select(GemmDescriptor(m, n, k, "bf16"), tuned(SM90, tile=tile))
        for a_t, b_t in ((False, False), (True, True), (False, True), (True, False)):
            t, kn = p.kernel_for(GemmArgs(operand(m, k, bfloat16, a_t),
                                          operand(k, n, bfloat16, b_t), row(m, n, bfloat16)))
            assert t.name == "gemm_sm90", (m, n, k, a_t, b_t)


@pytest.mark.parametrize("tile", ["wgmma128x256", "wgmma128x256c2"])
def test_launch_arguments(monkeypatch, fake_tensor_maps, tile):
    """GemmPlan.run on the wgmma kernel with a stand-in for the loaded kernel and for the
    driver's descriptor encoder: grid, the packed argument list (through the real ArgPack of the
    template's ABI) and both descriptors — encoded once per operand layout, the base address
    patched in afterwards."""
    import baracuda_dsl.ops.gemm.gemm_sm90_launch as G
    import baracuda_dsl.runtime.device as dev

    monkeypatch.setattr(dev, "sm_count", lambda ordinal=0: 132)
    m, n, k = 1000, 4096, 4104
    p = GemmPlan.select(GemmDescriptor(m, n, k, "bf16", beta=0.5, alpha=2.0,
                                       epilogue="bias_gelu"), tuned(SM90, tile=tile))
    cl = 2 if tile.endswith("c2") else 1
    calls = []

    class FakeKernel:
        cluster = cl
        handle = None

        def launch(self, grid, args, stream=0):
            calls.append((grid, list(args), stream))

    fake = FakeKernel()
    monkeypatch.setattr(p, "_kernel", lambda t, kn, o: fake)
    monkeypatch.setitem(G._MAX_CLUSTERS, id(fake), 60)       # as if the driver said 60
    a = row(m, k, bfloat16)
    b = col(k, n, bfloat16, ld=4104, off=1 << 30)            # the nn.Linear weight layout
    c = row(m, n, bfloat16, off=2 << 30)
    bias = tv((n,), (1,), bfloat16, off=3 << 30)
    p.run(GemmArgs(a, b, c, bias), stream=77)
    p.run(GemmArgs(a, b, c, bias), stream=77)                # descriptors from the cache
    a2 = row(m, k, bfloat16, off=5 << 30)                    # same layout, new base address
    p.run(GemmArgs(a2, b, c, bias), stream=77)
    assert len(calls) == 3 and calls[0][0] == calls[1][0] and calls[0][2] == 77
    grid, args, _ = calls[0]
    tiles = math.ceil(m / 128) * math.ceil(n / 256)
    assert grid == ((min(tiles, 132), 1, 1) if cl == 1 else (2 * 60, 1, 1))   # 64 pairs > 60
    la = TensorMapLayout("bf16", (k, m), (2 * k,), (64, 128), swizzle="128B",
                         l2_promotion="L2_128B")
    lb = TensorMapLayout("bf16", (k, n), (2 * 4104,), (64, 256 // cl), swizzle="128B",
                         l2_promotion="L2_128B")
    # the probe's three encodes, then one per operand layout at its first base address
    assert fake_tensor_maps.calls[3:] == [(la, BASE), (lb, BASE + (1 << 30))]
    ta, tb = args[:2]
    assert ta == fake_tensor_maps.bytes_of(la, BASE)
    assert tb == fake_tensor_maps.bytes_of(lb, BASE + (1 << 30))
    assert calls[1][1][:2] == [ta, tb]
    assert calls[2][1][:2] == [fake_tensor_maps.bytes_of(la, BASE + (5 << 30)), tb]
    assert args[2:] == [c.ptr, bias.ptr, c.ptr, c.ptr, m, n, k, n, 1, 1, 0, 0, 2.0, 0.5, 1,
                        spec90.ACT_CODES["gelu"] | spec90.EPI_VEC, 1, math.ceil(k / 64), 0]
    pack = ArgPack(spec90.GEMM_SM90.params)
    slots = (ctypes.c_void_p * len(args)).from_address(pack.set(args))
    assert ctypes.string_at(slots[0], 128) == ta and ctypes.string_at(slots[1], 128) == tb
    assert ctypes.c_int32.from_address(slots[17]).value == args[17]


# ------------------------------------------------------------------------------ tmap ABI
def test_tmap_abi_and_argpack():
    ptx = textwrap.dedent("""
        .visible .entry kern(
            .param .align 64 .b8 kern_param_0[128],
            .param .align 64 .b8 kern_param_1[128],
            .param .u64 .ptr .global .align 2 kern_param_2,
            .param .u32 kern_param_3,
            .param .u64 kern_param_4,
            .param .f32 kern_param_5
        )
        .reqntid 384, 1, 1
        {""")
    types = ptx_entry_params(ptx, "kern")
    assert types == ("b8[128]", "b8[128]", "u64", "u32", "u64", "f32")
    abi = params("ta:tmap tb:tmap c:ptr m:i32 s:i64 alpha:f32")
    check_abi(abi, types)
    with pytest.raises(ValueError):
        check_abi(params("ta:ptr tb:tmap c:ptr m:i32 s:i64 alpha:f32"), types)
    with pytest.raises(ValueError):       # an 8-byte struct is not a tensor map
        check_abi(params("ta:tmap"), ("b8[8]",))

    pack = ArgPack(abi)
    ta, tb = bytes(range(128)), bytes(range(128, 256))
    addr = pack.set([ta, tb, 0xDEADBEEF00, -7, 1 << 40, 0.5])
    slots = (ctypes.c_void_p * 6).from_address(addr)
    assert slots[0] % 64 == 0 and slots[1] % 64 == 0
    assert ctypes.string_at(slots[0], 128) == ta and ctypes.string_at(slots[1], 128) == tb
    assert ctypes.c_uint64.from_address(slots[2]).value == 0xDEADBEEF00
    assert ctypes.c_int32.from_address(slots[3]).value == -7
    assert ctypes.c_int64.from_address(slots[4]).value == 1 << 40
    assert ctypes.c_float.from_address(slots[5]).value == 0.5
    # scalar-only packs keep their 8-byte slots
    p2 = ArgPack(params("x:ptr n:i32 y:f64"))
    s2 = (ctypes.c_void_p * 3).from_address(p2.set([1, 2, 3.0]))
    assert s2[1] - s2[0] == 8 and s2[2] - s2[1] == 8


def test_operand_layouts():
    """The descriptor layouts of the kernel's operands: contiguous dim first, byte stride of
    the other dim, box = one 128-byte swizzle row × (tile rows | block k, split over the
    multicast CTAs), 128-byte swizzle, L2 promotion 128 B, zero fill."""
    lay = operand_layout("bf16", True, 1000, 4096, 4104, 128, 64)
    assert lay == TensorMapLayout("bf16", (4096, 1000), (8208,), (64, 128), swizzle="128B",
                                  l2_promotion="L2_128B", oob_fill="NONE")
    lay = operand_layout("f16", False, 7, 13, 8, 256, 64)
    assert (lay.dims, lay.strides, lay.box) == ((7, 13), (16,), (64, 64))
    lay = operand_layout("bf16", True, 14336, 4096, 4096, 256, 64, 2)
    assert lay.box == (64, 128)
    lay = operand_layout("e4m3", True, 1000, 4096, 4096, 128, 128)
    assert (lay.dtype, lay.box, lay.strides) == ("e4m3", (128, 128), (4096,))
    assert operand_layout("bf16", False, 4096, 1000, 4096, 256, 64, 2).box == (64, 32)


def test_epi_word():
    f = spec90.epi_word
    V = spec90.EPI_VEC
    assert f("gelu", 0x1000, 1000, 1, 7, 2) == spec90.ACT_CODES["gelu"] | V     # 2000-byte rows
    assert f("none", 0x1008, 1000, 1, 7, 2) == 0                    # base not 16-byte aligned
    assert f("relu", 0x1000, 1004, 1, 7, 2) == 1                    # 2008-byte rows
    assert f("relu", 0x1000, 1004, 1, 1, 2) == 1 | V                # ... irrelevant for m = 1
    assert f("silu", 0x1000, 1, 1000, 7, 2) == 3                    # column-major c
    assert f("none", 0x1000, 1000, 1, 7, 4, bias_ptr=0x2008) == 0   # bias not 16-byte aligned
    assert f("none", 0x1000, 1000, 1, 7, 4, bias_ptr=0x2010) == V
    assert f("none", 0x1000, 1000, 1, 7, 2, bias_ptr=0x2000, bs=2) == 0


# The probe runs in a fresh interpreter (CUTE_DSL_ARCH is read at import): it builds each
# operand's TMA atom through blocks.sm90.tma.operand_tma (what the kernel's launch uses) with
# *constant* shapes and strides, so the DSL's host code folds the descriptor words to constants
# in its lowered IR.
PROBE = r'''
import json, os, re, sys
import cutlass, cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
from cutlass.cute.runtime import make_fake_stream, make_ptr
from baracuda_dsl.blocks.sm90 import tma as B
from baracuda_dsl.ops.gemm.kernels import gemm_sm90 as K


def words(ir):
    consts = dict(re.findall(r"(%\d+) = llvm\.mlir\.constant\((-?\d+) : i64\)", ir))
    allocs = re.findall(r"(%\d+) = llvm\.alloca %\d+ x i64 \{alignment = 64", ir)
    assert len(allocs) == 1, allocs
    geps = dict((v, int(i)) for v, i in re.findall(
        r"(%\d+) = llvm\.getelementptr " + re.escape(allocs[0]) + r"\[0, (\d+)\]", ir))
    w = [0] * 16
    for val, p in re.findall(r"llvm\.store (%\d+), (%\d+) : i64", ir):
        if p in geps:
            w[geps[p]] = int(consts[val]) % 2 ** 64 if val in consts else None
    return w


def probe(dtype, kmajor, rows, k, ld, rows_tile, stages, mcast):
    T = K.TYPES[dtype]
    bk = 128 // (T.width // 8)

    @cute.kernel
    def kern(t: cute.CopyAtom):
        cpasync.prefetch_descriptor(t)

    types = []

    @cute.jit
    def launch(p: cute.Pointer, stream):
        atom, coord = B.operand_tma(T, kmajor, p, rows, k, ld, rows_tile, bk, stages, mcast)
        types.append((str(coord.type), str(B.coord_tensor(kmajor, rows, k).type)))
        kern(atom).launch(grid=[1, 1, 1], block=[32, 1, 1], stream=stream)

    c = cute.compile(launch, make_ptr(T, 16, cute.AddressSpace.gmem, assumed_align=16),
                     make_fake_stream())
    return words(str(c.ir_module)), types[0]


print("RESULT" + json.dumps([probe(*c) for c in json.loads(sys.argv[1])]))
'''

CASES = [
    # dtype, k-major, rows, k, ld, rows_tile, stages, multicast (the kernel's operands)
    ("bf16", True, 1000, 4096, 4096, 128, 6, 1),
    ("f16", True, 4096, 14336, 14336, 256, 4, 1),
    ("bf16", False, 1000, 127, 1000, 128, 6, 1),
    ("f16", False, 7, 4096, 8, 256, 4, 1),
    ("bf16", True, 7, 13, 16, 256, 4, 1),
    ("bf16", True, 1, 1, 8, 128, 6, 1),
    ("f16", True, 300000, 4096, 4104, 128, 6, 1),
    ("bf16", False, 130, 1, 136, 256, 4, 1),
    ("bf16", True, 3, 8, 2 ** 33 + 8, 128, 6, 1),     # a leading dim beyond 32-bit byte strides
    ("bf16", True, 14336, 4096, 4096, 256, 4, 2),     # the cluster SKUs' multicast b
    ("f16", False, 4096, 1000, 4096, 256, 4, 2),
    ("e4m3", True, 1000, 4096, 4096, 128, 6, 1),      # fp8: 128-element swizzle rows
    ("e5m2", True, 14336, 4112, 4112, 256, 4, 1),
    ("e4m3", True, 7, 16, 16, 128, 6, 1),
]


#: descriptor fields at the positions cuTensorMapEncodeTiled uses (read off its output on an
#: H100, driver 580, and the same in the DSL's own host encoding): word 1 holds the element type
#: (bits 8-11), the swizzle (13-14), the OOB fill (15), the L2 promotion (17-18) and the outer
#: byte stride / 16 (32-63; bits 36-39 of the stride in word 3, 32-35); word 4 the dims - 1;
#: words 6 / 7 the box - 1.  The DSL also sets bits 1 and 21 of word 1 and leaves words 8-9
#: zero where the driver writes them: the two encodings differ, but not in these fields.
HW_CODES = {"dtype": {"UINT8": 0, "FLOAT16": 3, "BFLOAT16": 5}, "swizzle": {"128B": 3},
            "oob_fill": {"NONE": 0}, "l2_promotion": {"L2_128B": 2}}


def descriptor_fields(w):
    return dict(dtype=(w[1] >> 8) & 15, swizzle=(w[1] >> 13) & 3, oob_fill=(w[1] >> 15) & 1,
                l2_promotion=(w[1] >> 17) & 3,
                strides=((((w[1] >> 32) | (((w[3] >> 32) & 15) << 32)) << 4),),
                dims=((w[4] & 0xFFFFFFFF) + 1, (w[4] >> 32) + 1),
                box=((w[6] >> 56) + 1, (w[7] & 0xFF) + 1))


def layout_fields(lay):
    from baracuda_dsl.ops.gemm.tensor_maps import DATA_TYPES

    return dict(dtype=HW_CODES["dtype"][DATA_TYPES[lay.dtype]],
                swizzle=HW_CODES["swizzle"][lay.swizzle],
                oob_fill=HW_CODES["oob_fill"][lay.oob_fill],
                l2_promotion=HW_CODES["l2_promotion"][lay.l2_promotion],
                strides=lay.strides, dims=lay.dims, box=lay.box)


def test_operand_layouts_match_dsl(tmp_path):
    """The layout the host asks the driver for (operand_layout) is the one the DSL built the
    kernel's TMA atoms for: element type, dims, stride, box (multicast split included), swizzle,
    L2 promotion and OOB fill, compared field by field with the DSL's folded host descriptor."""
    pytest.importorskip("cutlass")
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a", CUTE_DSL_DISABLE_FILE_CACHING="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(script), json.dumps(CASES)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    res = json.loads(out.stdout[out.stdout.index("RESULT") + 6:].strip().splitlines()[0])
    for case, (words, (dsl_coord, our_coord)) in zip(CASES, res):
        dt, kmajor, rows, k, ld, rows_tile, _, mcast = case
        bk = 128 // spec90.ITEMSIZE[dt]
        assert words[0] is None                      # the address is the only run-time word
        lay = operand_layout(dt, kmajor, rows, k, ld, rows_tile, bk, mcast)
        assert descriptor_fields(words) == layout_fields(lay), (case, words)
        # the kernel rebuilds the DSL's TMA coordinate tensor from m, n, k (compared where
        # no extent is 1: static unit modes fold to stride 0)
        if rows > 1 and k > 1:
            assert dsl_coord == our_coord, case


# ------------------------------------------------------------------------------ compile
SAMPLES = [dict(dtype="bf16", out="bf16", a_major="k", b_major="k", tile="128x256", cluster=1),
           dict(dtype="e4m3", b="e5m2", out="bf16", a_major="k", b_major="k", tile="128x256",
                cluster=1),
           dict(dtype="f16", out="f32", a_major="m", b_major="n", tile="128x128", cluster=1),
           dict(dtype="bf16", out="f32", a_major="k", b_major="n", tile="128x256", cluster=2)]


@pytest.mark.parametrize("knobs", SAMPLES, ids=lambda k: "-".join(map(str, k.values())))
def test_cross_compile(knobs):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    cubin, meta = compile_sku("gemm_sm90", freeze_knobs(knobs), bd.ArchSku.SM90A, timeout=900)
    assert cubin and meta["ptx_target"] == "sm_90a" and meta["threads"] == 384
    assert meta["cluster"] == knobs["cluster"]
    assert [p[1] for p in meta["params"]][:2] == ["tmap", "tmap"]


PTX_PROBE = r'''
import os, sys
from baracuda_dsl.ops.gemm.kernels import gemm_sm90
import cutlass.cute as cute
fn, args = gemm_sm90.build(gemm_sm90.Sm90Knobs(dtype="bf16", out="bf16", a_major="k",
                                               b_major="n", tile="128x256",
                                               cluster=int(sys.argv[3])))
c = cute.compile(fn, *args)
ptx = c.artifacts.PTX
if len(ptx) < 1000 and os.path.exists(ptx):
    ptx = open(ptx).read()
cub = c.artifacts.CUBIN
if isinstance(cub, str) and os.path.exists(cub):
    cub = open(cub, "rb").read()
open(sys.argv[1], "w").write(ptx)
open(sys.argv[2], "wb").write(bytes(cub))
'''


def _nvdisasm():
    exe = shutil.which("nvdisasm")
    if exe:
        return exe
    try:
        import nvidia

        for base in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvdisasm"):
                cand = os.path.join(base, sub, "bin", "nvdisasm")
                if os.path.exists(cand):
                    return cand
    except ImportError:
        pass
    return None


@pytest.mark.parametrize("cluster", [1, 2])
def test_ptx_and_sass_are_hopper_native(tmp_path, cluster):
    pytest.importorskip("cutlass")
    script = tmp_path / "ptx.py"
    script.write_text(PTX_PROBE)
    dump = tmp_path / "dump"
    dump.mkdir()
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a", CUTE_DSL_KEEP="ptx,cubin",
               CUTE_DSL_DUMP_DIR=str(dump), CUTE_DSL_DISABLE_FILE_CACHING="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ptx_path, cubin_path = tmp_path / "k.ptx", tmp_path / "k.cubin"
    out = subprocess.run([sys.executable, str(script), str(ptx_path), str(cubin_path),
                          str(cluster)],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    ptx = ptx_path.read_text()
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in ptx          # a
    assert ("multicast::cluster" in ptx) == (cluster == 2)               # b shared by 2 CTAs
    assert "setmaxnreg.dec" in ptx and "setmaxnreg.inc" in ptx
    assert len(re.findall(r"\.param \.align 64 \.b8 \w+\[128\]", ptx)) == 2
    assert "ld.local" not in ptx and "st.local" not in ptx
    nvd = _nvdisasm()
    if nvd is None:
        pytest.skip("nvdisasm not installed (pip install nvidia-cuda-nvdisasm): PTX checked only")
    sass = subprocess.run([nvd, str(cubin_path)], capture_output=True, text=True,
                          timeout=300).stdout
    assert "HGMMA.64x256x16.F32.BF16" in sass
    assert "UTMALDG" in sass and "USETMAXREG" in sass
    assert not re.search(r"\b(LDL|STL)\b", sass)      # no register spills to local memory
