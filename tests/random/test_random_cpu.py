"""Random family on the CPU: the numpy Philox4x32-10 reference against the published Random123
known answers, the stream definition (words per element, blocks consumed, launch-shape
independence of the kernels' block mapping), validation, SKU space and cross-compiles.

The reference functions here (``philox``, ``stream_words``, ``ref_*``) are also used by
``test_random_gpu.py`` for the bit-exact checks."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.ops.random import random as R
from baracuda_dsl.ops.random.specs import random as spec

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = np.uint64(0xFFFFFFFF)


# ================================================================== numpy reference
def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on arrays of counters (uint32-valued), key (k0, k1): four uint32 arrays."""
    c = [np.asarray(v, dtype=np.uint64) & MASK32 for v in (c0, c1, c2, c3)]
    ka, kb = np.uint64(k0) & MASK32, np.uint64(k1) & MASK32
    for r in range(10):
        if r:
            ka = (ka + np.uint64(W0)) & MASK32
            kb = (kb + np.uint64(W1)) & MASK32
        p0 = c[0] * np.uint64(M0)
        p1 = c[2] * np.uint64(M1)
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ ka) & MASK32, p1 & MASK32,
             ((p0 >> np.uint64(32)) ^ c[3] ^ kb) & MASK32, p0 & MASK32]
    return [v.astype(np.uint32) for v in c]


def stream_words(seed: int, offset: int, nwords: int) -> np.ndarray:
    """Words w[0..nwords) of the stream (seed, offset): block b = Philox(counter offset + b,
    key = seed's two 32-bit halves)."""
    s = seed % (1 << 64)
    nb = (nwords + 3) // 4
    ctr = np.arange(nb, dtype=np.uint64) + np.uint64(offset)
    w = philox(ctr & MASK32, ctr >> np.uint64(32), 0, 0, s & 0xFFFFFFFF, s >> 32)
    return np.stack(w, axis=1).reshape(-1)[:nwords]


def words64(seed, offset, n):
    """The 64-bit words (hi·2³² + lo) of wpe = 2 elements."""
    w = stream_words(seed, offset, 2 * n).astype(np.uint64)
    return (w[1::2] << np.uint64(32)) | w[0::2]


UBITS = {"float32": 24, "float16": 11, "bfloat16": 8}


def ref_unit(seed, offset, n, dtype):
    """The [0, 1) uniforms of a ``uniform`` draw as float64 (exact values)."""
    if dtype == "float64":
        return (words64(seed, offset, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    k = UBITS[dtype]
    w = stream_words(seed, offset, n)
    return (w >> np.uint32(32 - k)).astype(np.float64) * 2.0 ** -k


def ref_normal(seed, offset, n, dtype, mean=0.0, std=1.0):
    """Box–Muller per the stream definition, in float64."""
    if dtype == "float64":
        npair = (n + 1) // 2
        w = stream_words(seed, offset, 4 * npair).astype(np.uint64).reshape(-1, 4)
        a = (w[:, 1] << np.uint64(32)) | w[:, 0]
        b = (w[:, 3] << np.uint64(32)) | w[:, 2]
        u1 = ((a >> np.uint64(11)).astype(np.float64) + 1) * 2.0 ** -53
        u2 = (b >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    else:
        npair = (n + 1) // 2
        w = stream_words(seed, offset, 2 * npair).reshape(-1, 2)
        u1 = ((w[:, 0] >> np.uint32(8)).astype(np.float64) + 1) * 2.0 ** -24
        u2 = (w[:, 1] >> np.uint32(8)).astype(np.float64) * 2.0 ** -24
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1).reshape(-1)
    return mean + std * z[:n]


def ref_gumbel(seed, offset, n, dtype, loc=0.0, scale=1.0):
    if dtype == "float64":
        u = ((words64(seed, offset, n) >> np.uint64(12)).astype(np.float64) + 0.5) * 2.0 ** -52
    else:
        u = ((stream_words(seed, offset, n) >> np.uint32(9)).astype(np.float64) + 0.5) \
            * 2.0 ** -23
    return loc - scale * np.log(-np.log(u))


def ref_bernoulli(seed, offset, n, p):
    return stream_words(seed, offset, n).astype(np.int64) < R.keep_threshold(p)


def ref_keep(seed, offset, n, p):
    """Dropout's keep mask."""
    return stream_words(seed, offset, n).astype(np.int64) >= R.keep_threshold(p)


def ref_randint(seed, offset, n, low, high, dtype):
    span = high - low
    if dtype == "int64":
        w = words64(seed, offset, n)
        if span == 1 << 64:
            off = w.astype(object)
        else:
            off = np.array([(int(v) * span) >> 64 for v in w], dtype=object)
        return np.array([low + int(o) for o in off], dtype=np.int64)
    w = stream_words(seed, offset, n).astype(np.uint64)
    return (np.int64(low) + ((w * np.uint64(span)) >> np.uint64(32)).astype(np.int64)) \
        .astype(np.int32)


# ================================================================== known answers
KATS = [  # Random123 kat_vectors, philox4x32 10
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,expect", KATS)
def test_philox_known_answers(ctr, key, expect):
    out = philox(*ctr, *key)
    assert tuple(int(v) for v in out) == expect


def test_stream_words_blocks_and_key_halves():
    seed = (0xA4093822 << 32) | 0x299F31D0  # key (k0, k1) = (low, high) halves
    w = stream_words(seed, 0, 8)
    b0 = philox(0, 0, 0, 0, 0x299F31D0, 0xA4093822)
    b1 = philox(1, 0, 0, 0, 0x299F31D0, 0xA4093822)
    assert list(w) == [int(v) for v in b0] + [int(v) for v in b1]
    # the offset shifts by whole blocks; a counter past 2**32 carries into c1
    assert np.array_equal(stream_words(seed, 1, 4), w[4:8])
    big = (1 << 32) + 5
    assert [int(v) for v in stream_words(7, big, 4)] == \
        [int(v) for v in philox(5, 1, 0, 0, 7, 0)]
    # negative seeds are taken mod 2**64
    assert np.array_equal(stream_words(-1, 0, 4), stream_words((1 << 64) - 1, 0, 4))


def test_reference_distributions_are_sane():
    u = ref_unit(3, 0, 1 << 16, "float32")
    assert 0.0 <= u.min() and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    z = ref_normal(3, 0, 1 << 16, "float32")
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03
    z = ref_normal(3, 0, 1 << 14, "float64")
    assert abs(z.mean()) < 0.04 and abs(z.var() - 1) < 0.05
    g = ref_gumbel(3, 0, 1 << 16, "float32")
    assert abs(g.mean() - 0.5772156649) < 0.02
    # the extreme words give finite noise (u is never 0 or 1)
    for bits, k in ((np.uint64(0), 23), (np.uint64((1 << 23) - 1), 23),
                    (np.uint64((1 << 52) - 1), 52)):
        u = (float(bits) + 0.5) * 2.0 ** -k
        assert 0.0 < u < 1.0 and np.isfinite(-np.log(-np.log(np.float32(u) if k == 23 else u)))
    r = ref_randint(3, 0, 1000, -5, 7, "int32")
    assert r.min() == -5 and r.max() == 6
    r = ref_randint(3, 0, 100, -(1 << 63), 1 << 63, "int64")
    assert r.dtype == np.int64


# ================================================================== stream definition
def test_words_per_element_and_blocks():
    assert spec.words_per_element("uniform", "f32") == 1
    assert spec.words_per_element("uniform", "f64") == 2
    assert spec.words_per_element("normal", "bf16") == 1
    assert spec.words_per_element("randint", "i64") == 2
    assert spec.words_per_element("bernoulli", "f64") == 1
    assert spec.blocks_for(0, 1) == 0
    assert spec.blocks_for(1, 1) == 1
    assert spec.blocks_for(5, 1) == 2
    assert spec.blocks_for(5, 2) == 3
    assert spec.blocks_for(8, 2) == 4


@pytest.mark.parametrize("n,wpe", [(1, 1), (7, 1), (1000, 1), (4097, 1), (33, 2), (2049, 2)])
def test_kernel_block_mapping_covers_each_element_once(n, wpe):
    """Emulates random_fill / dropout's thread → block mapping: every element is written
    exactly once, from its own block (so the values cannot depend on the grid)."""
    E = 4 // wpe
    nblk = spec.blocks_for(n, wpe)
    per = spec.THREADS * spec.BPT
    grid = (nblk + per - 1) // per
    hits = np.zeros(n, dtype=np.int64)
    src = np.full(n, -1, dtype=np.int64)
    for c in range(grid):
        for j in range(spec.BPT):
            blk = (c * spec.BPT + j) * spec.THREADS + np.arange(spec.THREADS)
            blk = blk[blk < nblk]
            for e in range(E):
                i = blk * E + e
                ok = i < n
                np.add.at(hits, i[ok], 1)
                src[i[ok]] = blk[ok]
    assert (hits == 1).all()
    assert np.array_equal(src, np.arange(n) // E)


# ================================================================== validation
PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_random_descriptor_validation():
    with pytest.raises(InvalidProblemError):
        R.RandomDescriptor((4,), "poisson", "float32")
    with pytest.raises(UnsupportedError, match="wired"):
        R.RandomDescriptor((4,), "uniform", "int32")
    with pytest.raises(UnsupportedError):
        R.RandomDescriptor((4,), "randint", "float32")
    with pytest.raises(InvalidProblemError):
        R.RandomDescriptor((-1,), "uniform", "float32")
    assert R.RandomDescriptor((4,), "bernoulli", "bool").kernel_dtype == "u8"
    assert R.RandomDescriptor((4,), "bernoulli", "uint8").kernel_dtype == "u8"


def test_scalar_validation():
    assert R.seed_word(0) == 0
    assert R.seed_word((1 << 64) - 1) == -1
    assert R.seed_word(-5) == -5
    for bad in (1 << 64, -(1 << 63) - 1, 1.5, True):
        with pytest.raises(InvalidProblemError):
            R.seed_word(bad)
    for bad in (-1, 1 << 62, 0.5, None):
        with pytest.raises(InvalidProblemError):
            R.offset_word(bad)
    assert R.keep_threshold(0.0) == 0
    assert R.keep_threshold(1.0) == 1 << 32
    assert R.keep_threshold(0.5) == 1 << 31


def test_random_plan_scalars():
    plan = R.RandomPlan.select(R.RandomDescriptor((10,), "uniform", "float32"), PREF)
    assert plan._scalars(R.RandomArgs(None, 1, 2, a=-1.0, b=3.0))[:4] == (1, 2, -1.0, 3.0)
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 1, 2, a=1.0, b=1.0))
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 1, 2, a=float("nan")))
    plan = R.RandomPlan.select(R.RandomDescriptor((10,), "randint", "int32"), PREF)
    assert plan._scalars(R.RandomArgs(None, 0, 0, low=-3, high=9))[4:] == (-3, 12)
    assert plan._scalars(R.RandomArgs(None, 0, 0, low=5))[4:] == (0, 5)
    assert plan._scalars(R.RandomArgs(None, 0, 0, low=-(1 << 31), high=1 << 31))[4:] == \
        (-(1 << 31), 1 << 32)
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 0, 0, low=0, high=1 << 31 + 1))
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 0, 0, low=3, high=3))
    plan = R.RandomPlan.select(R.RandomDescriptor((10,), "randint", "int64"), PREF)
    assert plan._scalars(R.RandomArgs(None, 0, 0, low=-(1 << 63), high=1 << 63))[5] == 0
    plan = R.RandomPlan.select(R.RandomDescriptor((10,), "bernoulli", "bool"), PREF)
    assert plan._scalars(R.RandomArgs(None, 0, 0, p=0.25))[4] == 1 << 30
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 0, 0, p=1.5))
    plan = R.RandomPlan.select(R.RandomDescriptor((10,), "normal", "float32"), PREF)
    with pytest.raises(InvalidProblemError):
        plan._scalars(R.RandomArgs(None, 0, 0, a=0.0, b=-1.0))


def test_dropout_validation():
    for bad in (-0.1, 1.1, float("nan")):
        with pytest.raises(InvalidProblemError):
            R.DropoutDescriptor((4,), "float32", bad)
    with pytest.raises(UnsupportedError):
        R.DropoutDescriptor((4,), "int32", 0.5)
    with pytest.raises(InvalidProblemError):
        R.DropoutPlan.select(R.RandomDescriptor((4,)), PREF)
    with pytest.raises(InvalidProblemError):
        R.DropoutBackwardPlan.select(R.DropoutDescriptor((4,), "float32", 0.5), PREF)
    p = R.DropoutBackwardPlan.select(R.DropoutBackwardDescriptor((4, 5), "bfloat16", 0.1), PREF)
    assert p.blocks() == 5


def test_gumbel_softmax_validation():
    with pytest.raises(InvalidProblemError):
        R.GumbelSoftmaxDescriptor((4, 5), "float32", tau=0.0)
    with pytest.raises(InvalidProblemError):
        R.GumbelSoftmaxDescriptor((4, 5), "float32", axis=2)
    with pytest.raises(InvalidProblemError):
        R.GumbelSoftmaxDescriptor((), "float32")
    with pytest.raises(UnsupportedError):
        R.GumbelSoftmaxDescriptor((4, 5), "int32")
    d = R.GumbelSoftmaxDescriptor((4, 5), "float32", axis=-2, hard=True)
    assert d.axis == 0
    with pytest.raises(InvalidProblemError):
        R.GumbelSoftmaxBackwardDescriptor((4, 5), "float32", tau=-1.0)


def test_gumbel_softmax_select():
    import baracuda_dsl.ops.softmax.softmax  # noqa: F401
    for hard in (False, True):
        p = R.GumbelSoftmaxPlan.select(R.GumbelSoftmaxDescriptor((8, 33), "bfloat16", tau=0.5,
                                                                 hard=hard), PREF)
        assert p.workspace_size() >= 2 * 8 * 33 * 2
        assert p.blocks() == spec.blocks_for(8 * 33, 1)
    # axis not last: the noise buffer is laid out with the axis last
    p = R.GumbelSoftmaxPlan.select(R.GumbelSoftmaxDescriptor((3, 5, 7), "float64", axis=1,
                                                             hard=True), PREF)
    assert p._pshape == (3, 7, 5)
    assert p._vstrides == (35, 1, 5)
    assert p.blocks() == spec.blocks_for(105, 2)
    b = R.GumbelSoftmaxBackwardPlan.select(R.GumbelSoftmaxBackwardDescriptor(
        (8, 33), "float32", tau=2.0), PREF)
    assert b._scale is not None


# ================================================================== SKU space
def test_sku_space():
    fill = spec.RANDOM_FILL.skus("sm90a")
    assert len(fill) == sum(len(v) for v in spec.FILL_DTYPES.values()) == 21
    assert len(spec.DROPOUT.skus("sm90a")) == 4
    plan = R.RandomPlan.select(R.RandomDescriptor((3, 5), "normal", "float64"), PREF)
    assert plan.sku().template == "random_fill"
    assert dict(plan.sku().knobs) == dict(dist="normal", dtype="f64")
    assert plan.blocks() == spec.blocks_for(15, 2) == 8
    plan = R.DropoutPlan.select(R.DropoutDescriptor((7,), "float16", 0.2), PREF)
    assert dict(plan.sku().knobs) == dict(dtype="f16")
    assert plan.blocks() == 2


def test_generator_state_without_gpu():
    from array_api import random as xr

    g = xr.Generator(-1)
    assert g.seed == (1 << 64) - 1 and g.offset == 0
    assert g.take_offset(5) == 0 and g.offset == 5
    assert xr.default_rng(g) is g
    assert isinstance(xr.default_rng(), xr.Generator)
    with pytest.raises(InvalidProblemError):
        xr.Generator(1 << 64)


# ================================================================== cross-compile
SAMPLES = [("random_fill", dict(dist="uniform", dtype="f32")),
           ("random_fill", dict(dist="normal", dtype="bf16")),
           ("random_fill", dict(dist="randint", dtype="i64")),
           ("dropout", dict(dtype="f16"))]


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
@pytest.mark.parametrize("name,knobs", SAMPLES[:2] + SAMPLES[3:])
def test_cross_compile(arch, name, knobs):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
    assert len(cubin) > 0 and meta["threads"] == spec.THREADS


# ================================================================== Args checks (fake views)
def _fake(shape, dtype, ptr=1 << 20, strides=None):
    from baracuda_dsl.dtypes import dtype as as_dtype
    from baracuda_dsl.tensor import TensorView, contiguous_strides

    st = contiguous_strides(shape) if strides is None else strides
    return TensorView._trusted(ptr, tuple(shape), tuple(st), as_dtype(dtype), 0, None)


def test_random_args_checks():
    from baracuda_dsl.errors import MisalignedOperandError

    plan = R.RandomPlan.select(R.RandomDescriptor((4, 6), "uniform", "float32"), PREF)
    plan.can_implement(R.RandomArgs(_fake((4, 6), "float32"), 1, 2))
    with pytest.raises(MisalignedOperandError):
        plan.can_implement(R.RandomArgs(_fake((4, 6), "float32", ptr=(1 << 20) + 4), 1, 2))
    with pytest.raises(InvalidProblemError, match="contiguous"):
        plan.can_implement(R.RandomArgs(_fake((4, 6), "float32", strides=(1, 4)), 1, 2))
    with pytest.raises(UnsupportedError):
        plan.can_implement(R.RandomArgs(_fake((4, 6), "float64"), 1, 2))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(R.RandomArgs(_fake((4, 5), "float32"), 1, 2))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(R.DropoutArgs(None, None))
    # size-1 dims may have any stride; bool outputs need 4-byte alignment only
    p3 = R.RandomPlan.select(R.RandomDescriptor((4, 1, 6), "normal", "float32"), PREF)
    p3.can_implement(R.RandomArgs(_fake((4, 1, 6), "float32", strides=(6, 99, 1))))
    b = R.RandomPlan.select(R.RandomDescriptor((7,), "bernoulli", "bool"), PREF)
    b.can_implement(R.RandomArgs(_fake((7,), "bool", ptr=(1 << 20) + 4)))
    with pytest.raises(MisalignedOperandError):
        b.can_implement(R.RandomArgs(_fake((7,), "bool", ptr=(1 << 20) + 2)))


def test_dropout_args_checks():
    from baracuda_dsl.errors import MisalignedOperandError

    plan = R.DropoutPlan.select(R.DropoutDescriptor((3, 8), "bfloat16", 0.5), PREF)
    x, y = _fake((3, 8), "bfloat16"), _fake((3, 8), "bfloat16", ptr=1 << 21)
    plan.can_implement(R.DropoutArgs(x, y, 5, 6))
    plan.can_implement(R.DropoutArgs(x, y, 5, 6, _fake((3, 8), "uint8", ptr=1 << 22)))
    plan.can_implement(R.DropoutArgs(x, y, 5, 6, _fake((3, 8), "bool", ptr=1 << 22)))
    with pytest.raises(UnsupportedError):
        plan.can_implement(R.DropoutArgs(x, y, 5, 6, _fake((3, 8), "int32", ptr=1 << 22)))
    with pytest.raises(MisalignedOperandError):
        plan.can_implement(R.DropoutArgs(_fake((3, 8), "bfloat16", ptr=(1 << 20) + 2), y))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(R.DropoutArgs(x, y, 5, -1))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(R.DropoutBackwardArgs(x, y))
    bw = R.DropoutBackwardPlan.select(R.DropoutBackwardDescriptor((3, 8), "bfloat16", 0.5), PREF)
    bw.can_implement(R.DropoutBackwardArgs(x, y, 5, 6))
    with pytest.raises(InvalidProblemError):
        bw.can_implement(R.DropoutBackwardArgs(x, _fake((3, 8), "bfloat16", strides=(1, 3))))
