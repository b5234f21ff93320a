"""Launch records on the GPU: every recorded namespace function and a Plan of each kind called
again and again with new inputs (fresh arrays, and the same arrays refilled) gives the float64
reference each time, and the replay path was really taken (a confirmed record exists).  Aliased
operands (x * x), partially overlapping views and in-place updates keep their own records or the
full path."""

import numpy as np
import pytest

from tests._checks import assert_close, assert_equal, bounds

pytestmark = pytest.mark.gpu

xp = pytest.importorskip("array_api")
from baracuda_dsl.runtime import trace  # noqa: E402

REPEATS = 5


def _confirmed(fn) -> bool:
    table = getattr(fn, "records", None)
    return table is not None and any(getattr(r, "confirmed", False)
                                     for r in list(table.table.values()))


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = {
    # name: (make numpy inputs, namespace call, float64 reference, recorded function, bounds)
    "add": (lambda r: [_f32(r, 1000), _f32(r, 1000)], lambda a, b: xp.add(a, b),
            lambda a, b: a + b, "binary", bounds("float32", compute="float32", terms=1)),
    "mul scalar": (lambda r: [_f32(r, 77, 5)], lambda a: a * 2.5, lambda a: a * 2.5, "binary",
                   bounds("float32", compute="float32", terms=1)),
    "exp": (lambda r: [_f32(r, 513)], lambda a: xp.exp(a), np.exp, "unary",
            bounds("float32", compute="float32", terms=3)),
    "square alias": (lambda r: [_f32(r, 300)], lambda a: a * a, lambda a: a * a, "binary",
                     bounds("float32", compute="float32", terms=1)),
    # partially overlapping operands are never recorded (the full path every time)
    "shifted views": (lambda r: [_f32(r, 301)], lambda a: a[1:] + a[:-1],
                      lambda a: a[1:] + a[:-1], None,
                      bounds("float32", compute="float32", terms=1)),
    "strided": (lambda r: [_f32(r, 40, 30)], lambda a: xp.exp(a.T[::2]),
                lambda a: np.exp(a.T[::2]), "unary", bounds("float32", compute="float32",
                                                           terms=3)),
    "sum": (lambda r: [_f32(r, 4099)], lambda a: xp.sum(a), lambda a: a.sum(), "sum", None),
    "mean axis 0": (lambda r: [_f32(r, 64, 33)], lambda a: xp.mean(a, axis=0),
                    lambda a: a.mean(0), "mean", None),
    "matmul f32": (lambda r: [_f32(r, 64, 48), _f32(r, 48, 40)], lambda a, b: xp.matmul(a, b),
                   lambda a, b: a @ b, "matmul", None),
    "astype f16": (lambda r: [_f32(r, 999)], lambda a: xp.astype(a, xp.float16),
                   lambda a: a, "astype", bounds("float16", inputs="float32")),
    "where": (lambda r: [r.random(500) > 0.5, _f32(r, 500), _f32(r, 500)],
              lambda c, a, b: xp.where(c, a, b), lambda c, a, b: np.where(c, a, b), "where",
              (0.0, 0.0)),
    "softmax": (lambda r: [_f32(r, 8, 100)], lambda a: xp.softmax(a, axis=-1),
                lambda a: np.exp(a - a.max(-1, keepdims=True)) /
                np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), "softmax",
                bounds("float32", compute="float32", terms=20)),
    "cumulative_sum": (lambda r: [_f32(r, 3, 700)], lambda a: xp.cumulative_sum(a, axis=1),
                       lambda a: np.cumsum(a, 1), "cumulative_sum", None),
    "concat": (lambda r: [_f32(r, 10, 3), _f32(r, 7, 3)], lambda a, b: xp.concat([a, b]),
               lambda a, b: np.concatenate([a, b]), "concat", (0.0, 0.0)),
}


def _fn(name):
    import array_api._elementwise_functions as E
    import array_api._data_type_functions as D
    import array_api._linear_algebra_functions as L
    import array_api._manipulation_functions as M
    import array_api._searching_functions as S
    import array_api._softmax_extensions as X
    import array_api._statistical_functions as T

    for mod in (E, D, L, M, S, X, T):
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AssertionError(name)


@pytest.mark.parametrize("case", list(CASES))
def test_repeated_calls_match_the_reference(case):
    make, call, ref, rec_name, bnd = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    trace.clear_records()
    assert trace.recording()
    for k in range(REPEATS):
        host = make(rng)
        args = [xp.asarray(h) for h in host]
        out = call(*args).to_numpy().astype(np.float64)
        want = np.asarray(ref(*[h.astype(np.float64) if h.dtype != bool else h for h in host]),
                          np.float64)
        scale = None
        if bnd is None:      # sums / products: error relative to the sum of magnitudes
            want_abs = np.asarray(ref(*[np.abs(h.astype(np.float64)) for h in host]))
            n = max(h.size for h in host)
            bnd, scale = bounds("float32", compute="float32", terms=int(np.log2(n)) + 4), want_abs
            assert_close(out, want, *bnd, scale=scale, what=f"{case} call {k}")
            bnd = None
        else:
            assert_close(out, want, *bnd, what=f"{case} call {k}")
    if rec_name is not None:
        fn = _fn(rec_name)
        assert _confirmed(fn), (f"{case}: no confirmed launch record (replay not taken): "
                                f"{fn.records.explain()}")


def test_refilled_inputs_and_in_place_updates():
    """The same arrays refilled between calls, and ``acc += x`` (the output is an operand)."""
    rng = np.random.default_rng(3)
    trace.clear_records()
    acc_h = np.zeros(600, np.float64)
    acc = xp.zeros(600, dtype=xp.float32)
    x = xp.empty(600, dtype=xp.float32)
    for k in range(REPEATS + 2):
        h = _f32(rng, 600)
        x[...] = xp.asarray(h)
        acc += x
        acc_h += h
        y = xp.multiply(x, 3.0)
        assert_close(y.to_numpy(), h.astype(np.float64) * 3.0,
                     *bounds("float32", compute="float32", terms=1), what=f"x*3 call {k}")
    assert_close(acc.to_numpy(), acc_h, *bounds("float32", compute="float32", terms=REPEATS + 2),
                 scale=np.abs(acc_h) + 1, what="acc")
    assert _confirmed(_fn("binary"))


def test_scalar_values_and_signed_zero_are_part_of_the_key():
    a = xp.asarray(np.array([1.0, -2.0, 3.0], np.float32))
    for _ in range(REPEATS):
        assert_equal(xp.multiply(a, 0.0).to_numpy(), np.array([0.0, -0.0, 0.0], np.float32))
        assert_equal(xp.multiply(a, -0.0).to_numpy(), np.array([-0.0, 0.0, -0.0], np.float32))
        assert_equal(xp.add(a, 2).to_numpy(), np.array([3.0, 0.0, 5.0], np.float32))
    i8 = xp.asarray(np.array([1, 2], np.int8))
    for _ in range(3):
        assert_equal(xp.add(i8, 100).to_numpy(), np.array([101, 102], np.int8))
    with pytest.raises(OverflowError):
        xp.add(i8, 1000)


def test_index_checking_stays_on_for_recorded_takes():
    a = xp.asarray(np.arange(10, dtype=np.float32))
    idx = xp.asarray(np.array([1, 2, 3]))
    for _ in range(REPEATS):
        assert_equal(a[idx].to_numpy(), np.array([1, 2, 3], np.float32))
    old = xp.set_index_checking(False)
    try:
        for _ in range(REPEATS):
            assert_equal(a[idx].to_numpy(), np.array([1, 2, 3], np.float32))
    finally:
        xp.set_index_checking(old)
    bad = xp.asarray(np.array([1, 20, 3]))
    with pytest.raises(IndexError):
        a[bad]


def test_plans_replay_with_new_operands():
    """RMSNorm, elementwise, GEMM (sm90 with workspace) and a reduction run 5 times each on new
    namespace arrays; the plan keeps a confirmed record."""
    import baracuda_dsl as bd
    from baracuda_dsl.ops.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan
    from baracuda_dsl.ops.reduction import ReduceArgs, ReduceDescriptor, ReducePlan

    rng = np.random.default_rng(5)
    pr = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, 256), 1, "f32", 1e-6, True))
    pe = ElementwisePlan.select(ElementwiseDescriptor("add", ((1000,), (1000,)), bd.f32))
    pg = bd.GemmPlan.select(bd.GemmDescriptor(256, 192, 128, bd.bf16, out_dtype=bd.f32))
    pd = ReducePlan.select(ReduceDescriptor((16, 5000), (1,), "sum", bd.f32))
    ws_g = xp.empty(max(pg.workspace_size(), 1), dtype=xp.uint8)
    ws_d = xp.empty(max(pd.workspace_size(), 1), dtype=xp.uint8)
    for k in range(REPEATS):
        x, w = _f32(rng, 4, 256), _f32(rng, 256)
        y = xp.full((4, 256), float("nan"), dtype=xp.float32)
        pr.run(bd.RMSNormArgs(xp.asarray(x), y, xp.asarray(w)))
        x64 = x.astype(np.float64)
        want = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * w
        assert_close(y.to_numpy(), want, *bounds("float32", compute="float32", terms=260),
                     what=f"rmsnorm {k}")
        a, b = _f32(rng, 1000), _f32(rng, 1000)
        o = xp.full((1000,), float("nan"), dtype=xp.float32)
        pe.run(ElementwiseArgs([xp.asarray(a), xp.asarray(b)], [o]))
        assert_close(o.to_numpy(), a.astype(np.float64) + b,
                     *bounds("float32", compute="float32", terms=1), what=f"add {k}")
        Ad = xp.astype(xp.asarray(_f32(rng, 256, 128)), xp.bfloat16)   # sm90 TMA kernel
        Bd = xp.astype(xp.asarray(_f32(rng, 128, 192)), xp.bfloat16)
        A = np.asarray(Ad.to_numpy(), np.float64)                      # the bf16 values, exact
        B = np.asarray(Bd.to_numpy(), np.float64)
        C = xp.full((256, 192), float("nan"), dtype=xp.float32)
        pg.run(bd.GemmArgs(Ad, Bd, C), workspace=ws_g)
        assert_close(C.to_numpy(), A @ B, *bounds("float32", compute="float32", terms=128),
                     scale=np.abs(A) @ np.abs(B), what=f"gemm {k}")
        X = _f32(rng, 16, 5000)
        s = xp.full((16,), float("nan"), dtype=xp.float32)
        pd.run(ReduceArgs(xp.asarray(X), s), workspace=ws_d)
        assert_close(s.to_numpy(), X.astype(np.float64).sum(1),
                     *bounds("float32", compute="float32", terms=20),
                     scale=np.abs(X.astype(np.float64)).sum(1), what=f"reduce {k}")
    for p in (pr, pe, pg, pd):
        recs = p.__dict__.get("_launch_records")
        assert recs is not None and any(getattr(r, "confirmed", False)
                                        for r in recs.table.values()), type(p).__name__
