"""KV-cache append without a GPU: validation (one test per error class), the SKU space, the word
widening, the exact launches run through a numpy mirror of the kernel over fake device memory
(contiguous and paged caches, shuffled block tables, page sizes 16 and 256, strided k / v views
of one packed kv tensor, Dv != D, positions outside the cache with the status word, fp8), and a
cross-compile sample per arch."""

import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.errors import (BufferTooSmallError, DeviceMismatchError, InvalidProblemError,
                                 MisalignedOperandError, UnsupportedError)
from baracuda_dsl.ops.attention.kv_cache import (KvCacheAppendArgs, KvCacheAppendDescriptor,
                                                 KvCacheAppendPlan)
from baracuda_dsl.ops.attention.specs import kv_cache as spec
from baracuda_dsl.tensor import TensorView
from tests._attention_ref_rope import FakeHeap, kv_append

PREF = PlanPreference(arch=ArchSku.SM90A)


# ------------------------------------------------------------------ numpy mirror of the kernel
def emulate(heap, launch):
    """kernels/kv_cache.py over ``heap``: every word checked against the cache bounds first."""
    name, knobs, grid, args, _ = launch
    assert name == "kv_append"
    (pkn, pvn, pkc, pvc, pseq, ptab, pst, flags, S, Hk, smax, npages, maxpages, sl, tb, tp,
     *sides) = args
    w = knobs["itemsize"]
    assert grid[1:] == (2, 1)
    for side, (pn, pc) in enumerate(((pkn, pkc), (pvn, pvc))):
        total, words, nb, nt, nh, cb, cs, ch = sides[8 * side:8 * side + 8]
        assert grid[0] * spec.THREADS >= total
        for item in range(total):
            row, wd = divmod(item, words)
            bt, h = divmod(row, Hk)
            b, t = divmod(bt, S)
            p = int(heap.load(pseq + 4 * b * sl, np.int32)) + t
            ok = p >= 0
            pp = p if ok else 0
            base, r = b * cb, pp
            if flags & spec.PAGED:
                pidx, r = divmod(pp, smax)
                ok = ok and pidx < maxpages
                page = int(heap.load(ptab + 4 * (b * tb + pidx * tp), np.int32)) if ok else -1
                ok = ok and 0 <= page < npages
                base = page * cb
            else:
                ok = ok and p < smax
            if ok:
                src = pn + w * (b * nb + t * nt + h * nh + wd)
                dst = pc + w * (base + r * cs + h * ch + wd)
                assert src % w == 0 and dst % w == 0
                heap.store_bytes(dst, heap.load_bytes(src, w))
            elif flags & spec.HAS_STATUS:
                heap.store(pst, np.int32, 1)


def run(plan, args, heap, launches):
    launches.clear()
    plan.run(args)
    for launch in launches:
        emulate(heap, launch)
    return list(launches)


def _rand(heap, shape, dt, rng, **kw):
    v, a = heap.array(shape, dt, **kw)
    a[...] = rng.standard_normal(shape).astype(np.float32)
    return v, a


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


# --------------------------------------------------------------------------- validation
def test_descriptor_validation():
    for bad in (dict(max_seqlen=None),                                   # neither form
                dict(max_seqlen=8, num_pages=4, page_size=16, max_pages_per_seq=2),
                dict(max_seqlen=None, num_pages=4, page_size=24, max_pages_per_seq=2),
                dict(max_seqlen=None, num_pages=4, page_size=0, max_pages_per_seq=2),
                dict(max_seqlen=None, num_pages=4, page_size=16),
                dict(max_seqlen=-1), dict(max_seqlen=8, head_dim_v=1.5)):
        with pytest.raises(InvalidProblemError):
            KvCacheAppendDescriptor(2, 1, 2, 64, **bad)
    with pytest.raises(InvalidProblemError):
        KvCacheAppendDescriptor(-2, 1, 2, 64, max_seqlen=8)
    d = KvCacheAppendDescriptor(2, 1, 2, 64, "bf16", num_pages=4, page_size=16,
                                max_pages_per_seq=2)
    assert d.paged and d.head_dim_v == 64 and d.cache_shape(32) == (4, 16, 2, 32)
    assert KvCacheAppendDescriptor(2, 1, 2, 64, max_seqlen=8).cache_shape(64) == (2, 8, 2, 64)


def _contig(heap, dt="f16", b=2, s=3, hk=2, d=16, dv=16, smax=8):
    desc = KvCacheAppendDescriptor(b, s, hk, d, dt, head_dim_v=dv, max_seqlen=smax)
    kn, _ = heap.array((b, s, hk, d), dt)
    vn, _ = heap.array((b, s, hk, dv), dt)
    kc, _ = heap.array((b, smax, hk, d), dt)
    vc, _ = heap.array((b, smax, hk, dv), dt)
    seq, _ = heap.array((b,), "i32", fill=0)
    return desc, KvCacheAppendArgs(kn, vn, kc, vc, seq)


def _args(heap):
    d, a = _contig(heap)
    plan = KvCacheAppendPlan.select(d, PREF)
    plan.can_implement(a)

    def args(**kw):
        f = dict(a.__dict__)
        f.update(kw)
        return KvCacheAppendArgs(**f)

    return plan, a, args


def test_unsupported_error():
    with pytest.raises(UnsupportedError):
        KvCacheAppendDescriptor(2, 1, 2, 64, "int32")
    with pytest.raises(UnsupportedError):
        KvCacheAppendDescriptor(2, 1, 2, 64, max_seqlen=2**31)
    heap = FakeHeap()
    plan, a, args = _args(heap)
    seq64, _ = heap.array((2,), "i64")
    with pytest.raises(UnsupportedError):
        plan.can_implement(args(cache_seqlens=seq64))
    with pytest.raises(UnsupportedError):                         # non-unit last stride
        plan.can_implement(args(k_cache=a.k_cache.with_shape((2, 8, 2, 16),
                                                             (256, 32, 8, 2))))
    f32, _ = heap.array((2, 3, 2, 16), "f32")
    with pytest.raises(UnsupportedError):
        plan.can_implement(args(k_new=f32))


def test_invalid_problem_error():
    heap = FakeHeap()
    plan, a, args = _args(heap)
    with pytest.raises(InvalidProblemError):                      # wrong cache length
        plan.can_implement(args(k_cache=heap.array((2, 9, 2, 16), "f16")[0]))
    with pytest.raises(InvalidProblemError):                      # only one of the pair
        plan.can_implement(args(v_cache=None))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(args(k_new=None, k_cache=None, v_new=None, v_cache=None))
    bt, _ = heap.array((2, 1), "i32")
    with pytest.raises(InvalidProblemError):                      # block table, contiguous
        plan.can_implement(args(block_table=bt))
    with pytest.raises(InvalidProblemError):                      # cache over k_new
        plan.can_implement(args(k_cache=TensorView(a.k_new.ptr, (2, 8, 2, 16),
                                                   (256, 32, 16, 1), "f16")))
    with pytest.raises(InvalidProblemError):                      # caches overlap
        plan.can_implement(args(v_cache=a.k_cache))
    with pytest.raises(InvalidProblemError):                      # cache overlaps itself
        plan.can_implement(args(k_cache=a.k_cache.with_shape((2, 8, 2, 16), (0, 32, 16, 1))))
    st, _ = heap.array((0,), "i32")
    with pytest.raises(InvalidProblemError):
        plan.can_implement(args(status=st))
    pd = KvCacheAppendDescriptor(2, 3, 2, 16, "f16", num_pages=4, page_size=16,
                                 max_pages_per_seq=2)
    pk, _ = heap.array((4, 16, 2, 16), "f16")
    pv, _ = heap.array((4, 16, 2, 16), "f16")
    pplan = KvCacheAppendPlan.select(pd, PREF)
    with pytest.raises(InvalidProblemError):                      # paged needs a block table
        pplan.can_implement(args(k_cache=pk, v_cache=pv))
    bt2, _ = heap.array((2, 2), "i32")
    pplan.can_implement(args(k_cache=pk, v_cache=pv, block_table=bt2))
    bt3, _ = heap.array((2, 3), "i32")
    with pytest.raises(InvalidProblemError):                      # (B, max_pages) table
        pplan.can_implement(args(k_cache=pk, v_cache=pv, block_table=bt3))


def test_device_mismatch_error():
    heap = FakeHeap()
    plan, a, args = _args(heap)
    with pytest.raises(DeviceMismatchError):
        plan.can_implement(args(cache_seqlens=TensorView(a.cache_seqlens.ptr, (2,), (1,),
                                                         "i32", 1)))


def test_misaligned_operand_error():
    heap = FakeHeap()
    plan, a, args = _args(heap)
    with pytest.raises(MisalignedOperandError):
        plan.can_implement(args(k_new=TensorView(a.k_new.ptr + 1, a.k_new.shape,
                                                 a.k_new.strides, "f16")))


def test_buffer_too_small_error():
    heap = FakeHeap()
    plan, a, args = _args(heap)
    with pytest.raises(BufferTooSmallError):
        plan.can_implement(args(k_new=TensorView(a.k_new.ptr, a.k_new.shape, a.k_new.strides,
                                                 "f16", 0, capacity_bytes=8)))


def test_sku_space_and_words(launches):
    from baracuda_dsl.ops import get_template

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("kv_append").skus(arch)) == 5
    heap = FakeHeap()
    rng = np.random.default_rng(0)
    # (dtype, D, Dv, shift of k_new in bytes) -> expected word size
    for dt, d, dv, shift, word in (("f16", 64, 64, 0, 16), ("bf16", 12, 12, 0, 8),
                                   ("f32", 3, 3, 0, 4), ("f16", 64, 60, 0, 8),
                                   ("f16", 64, 64, 2, 2), ("f64", 2, 1, 0, 8),
                                   ("float8_e4m3", 32, 32, 0, 16), ("float8_e5m2", 5, 5, 1, 1)):
        desc = KvCacheAppendDescriptor(1, 2, 2, d, dt, head_dim_v=dv, max_seqlen=4)
        kn, _ = _rand(heap, (1, 2, 2, d), dt, rng, shift=shift)
        vn, _ = _rand(heap, (1, 2, 2, dv), dt, rng)
        kc, _ = heap.array((1, 4, 2, d), dt)
        vc, _ = heap.array((1, 4, 2, dv), dt)
        seq, _ = heap.array((1,), "i32", fill=1)
        launched = run(KvCacheAppendPlan.select(desc, PREF),
                       KvCacheAppendArgs(kn, vn, kc, vc, seq), heap, launches)
        assert launched[0][1] == {"itemsize": word}, (dt, d, dv, shift)
        assert dict(KvCacheAppendPlan.select(desc, PREF).sku().knobs) == {"itemsize": 16}


# --------------------------------------------------------------- emulated launches vs reference
@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64", "float8_e4m3"])
def test_contiguous_append(dt, launches):
    rng = np.random.default_rng(1)
    heap = FakeHeap()
    b, s, hk, d, dv, smax = 3, 4, 2, 32, 16, 9
    desc = KvCacheAppendDescriptor(b, s, hk, d, dt, head_dim_v=dv, max_seqlen=smax)
    kn, kna = _rand(heap, (b, s, hk, d), dt, rng)
    vn, vna = _rand(heap, (b, s, hk, dv), dt, rng)
    kc, kca = _rand(heap, (b, smax, hk, d), dt, rng)
    vc, vca = _rand(heap, (b, smax, hk, dv), dt, rng)
    seq, seqa = heap.array((b,), "i32")
    seqa[...] = [0, 5, 7]                        # the last sequence overflows by two rows
    st, sta = heap.array((1,), "i32", fill=0)
    want_k, bad_k = kv_append(kca, kna, seqa)
    want_v, bad_v = kv_append(vca, vna, seqa)
    run(KvCacheAppendPlan.select(desc, PREF),
        KvCacheAppendArgs(kn, vn, kc, vc, seq, status=st), heap, launches)
    assert np.array_equal(_bits(kca), _bits(want_k)) and np.array_equal(_bits(vca),
                                                                          _bits(want_v))
    assert bad_k and bad_v and sta[0] == 1
    assert np.array_equal(seqa, [0, 5, 7])       # not advanced


@pytest.mark.parametrize("page_size", [16, 256])
def test_paged_append_shuffled_table(page_size, launches):
    rng = np.random.default_rng(page_size)
    heap = FakeHeap(1 << 23)
    b, s, hk, d = 3, 20, 2, 16
    maxp = 3
    npages = b * maxp
    desc = KvCacheAppendDescriptor(b, s, hk, d, "bf16", num_pages=npages, page_size=page_size,
                                   max_pages_per_seq=maxp)
    # k and v as slices of one packed (B, S, 2, Hk, D) tensor
    _, kv = heap.array((b, s, 2, hk, d), "bf16")
    kv[...] = rng.standard_normal(kv.shape).astype(np.float32)
    kn, vn = heap.view(kv[:, :, 0], "bf16"), heap.view(kv[:, :, 1], "bf16")
    kc, kca = _rand(heap, (npages, page_size, hk, d), "bf16", rng)
    vc, vca = _rand(heap, (npages, page_size, hk, d), "bf16", rng)
    bt, bta = heap.array((b, maxp), "i32")
    bta[...] = rng.permutation(npages).reshape(b, maxp)
    seq, seqa = heap.array((b,), "i32")
    seqa[...] = [page_size - 3, 0, 2 * page_size + 1]
    st, sta = heap.array((1,), "i32", fill=0)
    want_k, bad = kv_append(kca, kv[:, :, 0], seqa, bta)
    want_v, _ = kv_append(vca, kv[:, :, 1], seqa, bta)
    launched = run(KvCacheAppendPlan.select(desc, PREF),
                   KvCacheAppendArgs(kn, vn, kc, vc, seq, block_table=bt, status=st), heap,
                   launches)
    assert launched[0][3][7] & spec.PAGED
    assert np.array_equal(_bits(kca), _bits(want_k))
    assert np.array_equal(_bits(vca), _bits(want_v))
    assert sta[0] == int(bad)
    # block-table entries outside [0, num_pages) and negative positions are skipped
    bta[0, 0] = -1
    bta[1, 0] = npages
    seqa[2] = -5
    sta[0] = 0
    want_k, bad = kv_append(kca, kv[:, :, 0], seqa, bta)
    run(KvCacheAppendPlan.select(desc, PREF),
        KvCacheAppendArgs(kn, vn, kc, vc, seq, block_table=bt, status=st), heap, launches)
    assert bad and sta[0] == 1 and np.array_equal(_bits(kca), _bits(want_k))


def test_only_values_and_empty(launches):
    rng = np.random.default_rng(2)
    heap = FakeHeap()
    desc = KvCacheAppendDescriptor(2, 1, 1, 8, "f32", max_seqlen=4)
    vn, vna = _rand(heap, (2, 1, 1, 8), "f32", rng)
    vc, vca = _rand(heap, (2, 4, 1, 8), "f32", rng)
    seq, seqa = heap.array((2,), "i32")
    seqa[...] = [3, 1]
    want, bad = kv_append(vca, vna, seqa)
    launched = run(KvCacheAppendPlan.select(desc, PREF),
                   KvCacheAppendArgs(None, vn, None, vc, seq), heap, launches)
    assert launched[0][3][16] == 0                 # no k words
    assert not bad and np.array_equal(vca, want)
    for shape in ((0, 3, 2, 8), (2, 0, 2, 8), (2, 3, 0, 8)):
        d = KvCacheAppendDescriptor(*shape, max_seqlen=4)
        assert KvCacheAppendPlan.select(d, PREF).is_empty()
    assert KvCacheAppendPlan.select(KvCacheAppendDescriptor(2, 3, 2, 0, max_seqlen=4),
                                    PREF).is_empty()


# ----------------------------------------------------------------------------- cross-compile
@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")

    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    for knobs in (dict(itemsize=16), dict(itemsize=2), dict(itemsize=1)):
        assert freeze_knobs(knobs) in get_template("kv_append").skus(arch.value)
        cubin, meta = compile_sku("kv_append", freeze_knobs(knobs), arch, timeout=600)
        assert cubin[:4] == b"\x7fELF" and meta["threads"] == spec.THREADS
