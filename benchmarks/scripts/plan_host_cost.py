"""Host cost of ``plan.run`` — Args validation, views, argument packing — with the kernel launch
replaced by a no-op and made-up device pointers: no GPU needed, so two source trees can be
compared on one machine, interleaved (the launch itself is the same driver call in both).

    PYTHONPATH=<tree> python3 benchmarks/scripts/plan_host_cost.py

prints one ``case<TAB>µs`` line per plan (median of 7 timings of 4000 calls after warm-up).
Run it as a script with the tree to measure first on PYTHONPATH (not with ``-m``, which would put
the current checkout first)."""
import statistics, sys, time
import baracuda_dsl as bd
from baracuda_dsl.plan import Plan
from baracuda_dsl.tensor import TensorView, contiguous_strides


class K:
    def launch(self, grid, args, stream):
        pass


Plan._kernel = lambda self, t, k, o: K()
PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
_p = [1 << 30]


def tv(shape, dt):
    _p[0] += 1 << 24
    return TensorView(_p[0], tuple(shape), contiguous_strides(tuple(shape)), bd.dtypes.dtype(dt), 0)


def cases():
    x, y, w = tv((8, 4096), "bf16"), tv((8, 4096), "bf16"), tv((4096,), "bf16")
    rms = bd.RMSNormPlan.select(bd.RMSNormDescriptor((8, 4096), 1, "bf16"), PREF)
    yield "rms_norm fw 8x4096", lambda: rms.run(bd.RMSNormArgs(x, y, weight=w))
    ln = bd.LayerNormPlan.select(bd.LayerNormDescriptor((8, 4096), 1, "bf16"), PREF)
    b = tv((4096,), "bf16")
    yield "layer_norm fw 8x4096", lambda: ln.run(bd.LayerNormArgs(x, y, weight=w, bias=b))
    sm = bd.SoftmaxPlan.select(bd.SoftmaxDescriptor((8, 4096), bd.bf16), PREF)
    yield "softmax fw 8x4096", lambda: sm.run(bd.SoftmaxArgs(x, y))
    a1, a2, o = tv((1024,), "f32"), tv((1024,), "f32"), tv((1024,), "f32")
    add = bd.BinaryPlan.select(bd.ElementwiseDescriptor("add", ((1024,), (1024,)), "f32"), PREF)
    yield "add flat 1024", lambda: add.run(bd.ElementwiseArgs([a1, a2], [o]))
    m, v, mo = tv((64, 1024), "bf16"), tv((1024,), "bf16"), tv((64, 1024), "bf16")
    badd = bd.BinaryPlan.select(bd.ElementwiseDescriptor("add", ((64, 1024), (1024,)), "bf16"),
                                PREF)
    yield "add broadcast 64x1024", lambda: badd.run(bd.ElementwiseArgs([m, v], [mo]))
    r = bd.ReducePlan.select(bd.ReduceDescriptor((64, 1024), axes=(1,), op="sum", dtype="f32"),
                             PREF)
    rx, ro = tv((64, 1024), "f32"), tv((64,), "f32")
    ws = bd.Workspace(1 << 40, 1 << 24)
    yield "reduce sum 64x1024", lambda: r.run(bd.ReduceArgs(rx, ro), workspace=ws)


def timeit(fn, n=4000):
    for _ in range(200):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


for name, fn in cases():
    print(f"{name}\t{statistics.median(timeit(fn) for _ in range(7)):.2f}")
