"""KV-cache append on the GPU, bit-exact against a host reference
(tests/_attention_ref_rope.kv_append): contiguous and paged caches (page sizes 16 and 256,
shuffled block tables), every dtype (f16 / bf16 / f32 / f64 / fp8), Dv != D, k / v as strided
views of one packed kv tensor, misaligned operands (narrower words), single-token decoding steps,
rows past the cache / bad block-table entries (skipped, status word set), only-v appends and
empty problems.  Caches start NaN-poisoned: every row the append must not touch keeps its poison
bytes, every row it must write holds the new bytes."""

import numpy as np
import pytest

from baracuda_dsl.ops.attention.kv_cache import (KvCacheAppendArgs, KvCacheAppendDescriptor,
                                                 KvCacheAppendPlan)
from tests._attention_ref_rope import kv_append
from tests._checks import poison

pytestmark = pytest.mark.gpu

DTYPES = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"]
PLAN_DT = {"float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2"}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _rand(torch, shape, dt, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=torch.float32).to(
        getattr(torch, dt))


def _poison(torch, shape, dt):
    """NaN-filled cache (fp8: the byte 0x7F, NaN in both e4m3fn and e5m2)."""
    if dt.startswith("float8"):
        return torch.full(shape, 0x7F, device="cuda", dtype=torch.uint8).view(getattr(torch, dt))
    return poison(torch, shape, getattr(torch, dt))


def _bytes(torch, t):
    """Host bytes of ``t`` (uint8 numpy, (..., D·itemsize)): a bit-exact, dtype-free view."""
    return t.contiguous().view(torch.uint8).cpu().numpy()


def _check(torch, cache, before, new, seqlens, table=None, what=""):
    """``cache`` (after the run) equals ``before`` with ``new`` appended; returns whether some
    row fell outside the cache."""
    want, bad = kv_append(_bytes(torch, before), _bytes(torch, new), seqlens.cpu().numpy(),
                          None if table is None else table.cpu().numpy())
    got = _bytes(torch, cache)
    assert np.array_equal(got, want), (what, np.argwhere(got != want)[:5])
    return bad


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("b,s_new,hk,d,dv,smax", [(2, 1, 4, 128, 128, 64),
                                                   (3, 17, 2, 64, 32, 40),
                                                   (1, 1023, 1, 16, 16, 1100),
                                                   (2, 5, 3, 7, 5, 9)])
def test_contiguous(torch, dt, b, s_new, hk, d, dv, smax):
    pdt = PLAN_DT.get(dt, dt)
    kn = _rand(torch, (b, s_new, hk, d), dt, 1)
    vn = _rand(torch, (b, s_new, hk, dv), dt, 2)
    kc = _poison(torch, (b, smax, hk, d), dt)
    vc = _poison(torch, (b, smax, hk, dv), dt)
    k0, v0 = kc.clone(), vc.clone()
    seq = torch.tensor([(7 * i) % max(smax - s_new + 1, 1) for i in range(b)], device="cuda",
                       dtype=torch.int32)
    st = torch.zeros(1, device="cuda", dtype=torch.int32)
    desc = KvCacheAppendDescriptor(b, s_new, hk, d, pdt, head_dim_v=dv, max_seqlen=smax)
    KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(kn, vn, kc, vc, seq, status=st))
    bad = _check(torch, kc, k0, kn, seq, what="k") | _check(torch, vc, v0, vn, seq, what="v")
    assert not bad and int(st.item()) == 0
    # the next step overflows the cache for the last sequence
    seq[-1] = smax - 1
    st.zero_()
    k0, v0 = kc.clone(), vc.clone()
    KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(kn, vn, kc, vc, seq, status=st))
    bad = _check(torch, kc, k0, kn, seq, what="k2") | _check(torch, vc, v0, vn, seq, what="v2")
    assert bad == (s_new > 1) and int(st.item()) == int(bad)


@pytest.mark.parametrize("page_size", [16, 256])
@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32", "float8_e4m3fn"])
def test_paged_shuffled(torch, page_size, dt):
    b, s_new, hk, d = 3, 37, 2, 128
    maxp = 4
    npages = b * maxp + 2
    kv = _rand(torch, (b, s_new, 2, hk, d), dt, 3)          # k and v packed: strided views
    kn, vn = kv[:, :, 0], kv[:, :, 1]
    kc = _poison(torch, (npages, page_size, hk, d), dt)
    vc = _poison(torch, (npages, page_size, hk, d), dt)
    g = torch.Generator().manual_seed(page_size)
    table = torch.randperm(npages, generator=g)[:b * maxp].reshape(b, maxp).to(
        device="cuda", dtype=torch.int32)
    # the third sequence fits at step 0 and runs past its 4 pages from step 1 on
    seq = torch.tensor([0, page_size - 5, maxp * page_size - 40], device="cuda",
                       dtype=torch.int32)
    st = torch.zeros(1, device="cuda", dtype=torch.int32)
    desc = KvCacheAppendDescriptor(b, s_new, hk, d, PLAN_DT.get(dt, dt), num_pages=npages,
                                   page_size=page_size, max_pages_per_seq=maxp)
    plan = KvCacheAppendPlan.select(desc)
    for step in range(3):                                    # repeated calls: record replays
        k0, v0 = kc.clone(), vc.clone()
        st.zero_()
        plan.run(KvCacheAppendArgs(kn, vn, kc, vc, seq, block_table=table, status=st))
        bad = _check(torch, kc, k0, kn, seq, table, f"k{step}")
        bad |= _check(torch, vc, v0, vn, seq, table, f"v{step}")
        assert int(st.item()) == int(bad)
        seq += s_new
    assert int(st.item()) == 1                               # the last step ran off the table


def test_paged_bad_table_entries_and_negative_positions(torch):
    b, s_new, hk, d, ps, maxp = 3, 20, 1, 64, 16, 2
    npages = 6
    kn = _rand(torch, (b, s_new, hk, d), "float16", 4)
    vn = _rand(torch, (b, s_new, hk, d), "float16", 5)
    kc = poison(torch, (npages, ps, hk, d), torch.float16)
    vc = poison(torch, (npages, ps, hk, d), torch.float16)
    table = torch.tensor([[0, -1], [6, 2], [3, 4]], device="cuda", dtype=torch.int32)
    seq = torch.tensor([0, 5, -7], device="cuda", dtype=torch.int32)
    st = torch.zeros(1, device="cuda", dtype=torch.int32)
    k0, v0 = kc.clone(), vc.clone()
    desc = KvCacheAppendDescriptor(b, s_new, hk, d, "float16", num_pages=npages, page_size=ps,
                                   max_pages_per_seq=maxp)
    KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(kn, vn, kc, vc, seq, block_table=table,
                                                         status=st))
    assert _check(torch, kc, k0, kn, seq, table) and _check(torch, vc, v0, vn, seq, table)
    assert int(st.item()) == 1


def test_misaligned_and_only_v(torch):
    """k_new one element past a 16-byte boundary (2-byte words), then a v-only append."""
    b, s_new, hk, d, smax = 2, 3, 2, 64, 8
    base = _rand(torch, (b, s_new, hk, d + 1), "bfloat16", 6)
    kn = base[..., 1:]
    vn = _rand(torch, (b, s_new, hk, d), "bfloat16", 7)
    kc = poison(torch, (b, smax, hk, d), torch.bfloat16)
    vc = poison(torch, (b, smax, hk, d), torch.bfloat16)
    seq = torch.tensor([1, 4], device="cuda", dtype=torch.int32)
    k0, v0 = kc.clone(), vc.clone()
    desc = KvCacheAppendDescriptor(b, s_new, hk, d, "bfloat16", max_seqlen=smax)
    KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(kn, vn, kc, vc, seq))
    assert not _check(torch, kc, k0, kn, seq) and not _check(torch, vc, v0, vn, seq)
    v1 = vc.clone()
    seq2 = torch.tensor([4, 5], device="cuda", dtype=torch.int32)
    KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(None, vn, None, vc, seq2))
    assert not _check(torch, vc, v1, vn, seq2)


def test_empty(torch):
    for shape in ((0, 3, 2, 8), (2, 0, 2, 8), (2, 3, 0, 8)):
        b, s, hk, d = shape
        desc = KvCacheAppendDescriptor(b, s, hk, d, "float16", max_seqlen=4)
        kn = torch.empty(shape, device="cuda", dtype=torch.float16)
        kc = torch.empty((b, 4, hk, d), device="cuda", dtype=torch.float16)
        seq = torch.zeros(b, device="cuda", dtype=torch.int32)
        KvCacheAppendPlan.select(desc).run(KvCacheAppendArgs(kn, kn.clone(), kc, kc.clone(),
                                                             seq))
    torch.cuda.synchronize()
