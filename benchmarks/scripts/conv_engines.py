"""cuDNN engine study (GPU host): for ResNet-50 layer shapes (bf16 NHWC, batch 32), each conv
plan's device time and host µs against torch's, then the device time of every ranked cuDNN
execution plan (heuristics A + fallback, with and without the numerical-note filters), each
launched through the raw-pointer path; ends with a cProfile of one ``plan.run``.  Reads the
plans' internals (a diagnostic, not an API).

    python3 benchmarks/scripts/conv_engines.py
"""
import cProfile, pstats, io
import torch
import torch.nn.functional as F
from benchmarks import harness as H
from baracuda_dsl.ops.conv import (ConvArgs, ConvDescriptor, ConvPlan, ConvBackwardDataPlan,
                                   ConvBackwardDataArgs, ConvBackwardFilterPlan, ConvBackwardFilterArgs)
from baracuda_dsl.ops.conv import cudnn_backend as cb

torch.backends.cudnn.benchmark = False
cl = torch.channels_last
CASES = [(64, 56, 64, 3, 1), (128, 56, 128, 3, 2), (256, 14, 1024, 1, 1), (512, 7, 512, 3, 1)]


def dev_ms(fn):
    return H.bench(fn, reps=10, warm=2, batch=8).median


for (c, hw, k, r, s) in CASES:
    pad = r // 2
    desc = ConvDescriptor(2, 32, c, k, (hw, hw), r, s, pad, dtype="bf16", layout="NHWC")
    x = torch.randn(desc.x_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
    w = torch.randn(desc.w_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
    dy = torch.randn(desc.y_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
    y = torch.empty_like(dy)
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    st = torch.cuda.current_stream().cuda_stream
    print(f"=== C{c} HW{hw} K{k} {r}x{r} s{s}", flush=True)
    for op, cls, args, tfn in [
        ("fprop", ConvPlan, ConvArgs(x, w, y), lambda: F.conv2d(x, w, stride=s, padding=pad)),
        ("dgrad", ConvBackwardDataPlan, ConvBackwardDataArgs(dy, w, torch.empty_like(x)),
         lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [pad, pad], [1, 1], False, [0, 0], 1, [True, False, False])[0]),
        ("wgrad", ConvBackwardFilterPlan, ConvBackwardFilterArgs(x, dy, torch.empty_like(w)),
         lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [pad, pad], [1, 1], False, [0, 0], 1, [False, True, False])[1]),
    ]:
        plan = cls.select(desc)
        plan.run(args, workspace=ws)
        built = plan._built(0)
        print(f"[{op}] torch {dev_ms(tfn):.4f} ms | ours {dev_ms(lambda: plan.run(args, workspace=ws)):.4f} ms raw={built.raw is not None}"
              f" host us ours {H.host_us(lambda: plan.run(args, workspace=ws), n=300, warm=20):.1f} torch {H.host_us(tfn, n=300, warm=20):.1f}", flush=True)
        bound = plan._bind(args)
        ptrs = {role: bound[field].ptr for role, field in plan._roles.items() if role != "bias"}
        for filters in (True, False):
            g, t, h = cb.declare(plan._spec, 0, filters=filters)
            cb.library().set_stream(h, st)
            n = g.get_execution_plan_count()
            res = []
            for i in range(min(n, 40)):
                try:
                    name = g.get_plan_name_at_index(i)
                    g.build_plan_at_index(i)
                    if g.get_workspace_size_plan_at_index(i) > ws.numel():
                        continue
                    raw = cb.raw_launch(g, t, [rr for rr in plan._spec.roles if rr in t], h)
                    if raw is None:
                        res.append((9.9, i, name + " (no raw)")); continue
                    fn = lambda: raw.run(ptrs, ws.data_ptr())
                    fn(); torch.cuda.synchronize()
                    res.append((dev_ms(fn), i, name))
                except Exception as e:
                    res.append((99.0, i, f"fails {repr(e)[:80]}"))
            res.sort()
            first = [r_ for r_ in res if r_[1] == 0]
            print(f"  filters={filters} plans={n} first={first[0] if first else None}")
            for r_ in res[:4]:
                print(f"    {r_[0]:.4f} ms [{r_[1]}] {r_[2]}")
        del g, t

# host-cost profile of one plan.run
desc = ConvDescriptor(2, 32, 64, 64, (56, 56), 3, 1, 1, dtype="bf16", layout="NHWC")
plan = ConvPlan.select(desc)
x = torch.randn(desc.x_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
w = torch.randn(desc.w_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
y = torch.empty(desc.y_shape, device="cuda").bfloat16().contiguous(memory_format=cl)
ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
a = ConvArgs(x, w, y)
for _ in range(50):
    plan.run(a, workspace=ws)
torch.cuda.synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(2000):
    plan.run(a, workspace=ws)
pr.disable()
torch.cuda.synchronize()
sio = io.StringIO()
pstats.Stats(pr, stream=sio).sort_stats("tottime").print_stats(25)
print(sio.getvalue())
