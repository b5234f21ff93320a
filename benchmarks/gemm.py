"""GEMM benchmarks: GemmPlan bf16 / f16 against torch.matmul (cuBLAS) (section ``gemm``) and the
low-precision GEMMs tf32, int8, fp8 against torch (section ``gemm_lowp``), measured interleaved;
plus the sweeps behind the tile / split-K / epilogue notes of benchmarks/RESULTS.md.

Ours and torch run in the same process on the GPU host.  Usage (from the repo root)::

    python3 -m benchmarks.gemm [--quick] [--variants] [--epilogue E]
                               [--dtypes bfloat16,float16,tf32,int8,fp8]
                               [--match SUBSTR,...] [--out DIR]
    python3 -m benchmarks.gemm --k-sweep [--epilogue E] [--dtypes bfloat16] [--out DIR]
    python3 -m benchmarks.gemm --split-sweep ["m=256,128,64,32;k=4096,14336"] [--out DIR]
    python3 -m benchmarks.gemm --provenance [--out DIR]      # every RESULTS.md GEMM note, < 3 min

``--dtypes`` picks the rows (default all): bfloat16 / float16 run section ``gemm``, tf32 / int8 /
fp8 section ``gemm_lowp``; a section none of whose dtypes is asked for does not run.  run_all
calls ``run`` (section ``gemm``) and ``run_lowp`` (section ``gemm_lowp``) with
``(out_dir, quick, log)``.

bf16 / f16 (GemmPlan, f32 accumulate), cases with row-major a (m, k):

=====================  ======================================================================
square (NN)            m = n = k ∈ {2048, 4096, 6144, 8192}, b a row-major (k, n) matrix
LLM (NT)               m ∈ {1, 16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096),
                       (4096, 14336), (128256, 4096)}; b = w.T of a row-major (n, k) weight
                       (the nn.Linear layout)
=====================  ======================================================================

Per row: the default plan's kernel (``plan.kernel_for(args)``: template and tile), device µs per
call (CUDA events) and host µs per call (enqueue, see below) of ours and of cuBLAS side by side,
TFLOP/s (2·m·n·k / device time), "vs cuBLAS" = torch device time / ours (1.0 = parity), and the
check.  ``--epilogue`` (``bias``, ``bias_relu``, ``bias_gelu``, ``bias_silu``) runs the rows with
that fused epilogue (bias (n,) in the output dtype) against torch's unfused ``addmm`` + activation.
``--variants`` adds, on sm90a devices, one column per forced kernel (``tile=`` wgmma128x128,
wgmma128x256, wgmma128x256c2 and the mma.sync tile), timed in the same interleaved rounds.
``--quick``: bf16 only, squares 2048 / 4096 and the (4096, 4096) LLM shapes (7 rows).

Checks (``benchmarks/gemm_check.py``; before timing): every checked run — the default plan's, each
forced variant's (its own run, never the default's output) and cuBLAS's — writes into an output
filled with its dtype's NaN first (``tests/_checks.py`` ``poison_``), which is then compared with
a float64 reference (``torch.matmul`` of ``.double()`` operands, in row blocks) element by element
and in norm: ``|out − ref| <= atol + eps(out)/2 · |ref| + K · 2^-24 · (1 + eps/2) · (|A| @ |B|)``
(half an ulp of the output dtype plus the f32 accumulation over K; epilogues add their own f32
roundings and the activation's Lipschitz constant).  "ok (e, w of bound)": e = ‖out − ref‖/‖ref‖,
w = max |out − ref| / allowed (≤ 1).  A variant that fails shows "FAIL" and is not timed.
cuBLAS's verdict is informational only (torch lets cuBLAS reduce split-K partial sums in bf16).

Measurement (:func:`interleaved`, for every section): a fixed warm-up of every callable, then
rounds that alternate blocks of back-to-back calls (ours, torch, ours, torch, ...; each block
bracketed by CUDA events), so clock / power drift hits every column alike; the median block
time per call of each callable is reported.  Block size and round count adapt so
one row costs about ``ROW_BUDGET_S`` seconds of timing.  Problems whose operands fit in L2
rotate over several operand sets (METHOD.md: repeated runs over one buffer measure the cache).
Device time is measured with the queue prefilled (each block sits behind a GPU sleep covering its
enqueue), so decode shapes (m = 1, 16, ...) are not timed at the speed of the Python launch path;
the host cost is its own column: ``time.perf_counter`` around the same block of N back-to-back
``plan.run`` (pre-built Args) / ``torch.mm`` calls, no synchronisation inside, divided by N,
after the warm-up (median over the rounds).  Where host µs > device µs the call is host-bound in
real use.  Budget on an H100: default run (48 rows) about 1.5 minutes, ``--variants`` about 3,
``--quick`` about 15 s — assuming every SKU is already in the kernel cache (a cache miss
compiles at first use) — plus the float64 checks (a few seconds in all; the largest row,
16384 × 128256 × 4096, needs about 0.7 s of FP64 GEMM per checked output).

Sweeps (each row checked as above, cuBLAS timed in the same rounds; bf16 unless ``--dtypes``
names bfloat16 / float16):

* ``--k-sweep``: m = 16384, n = 14336 (NT), k ∈ {64, 128, ..., 4096}: device ms per k and the
  least-squares line ms = a + b·k (a = the fixed per-tile cost: epilogue, prologue, scheduling);
  with ``--epilogue`` for that epilogue.
* ``--split-sweep [SPEC]``: forced tile × split count (``GemmTuning(tile, splits)``) at small m,
  long format (one line per variant, vs cuBLAS and host µs each).  SPEC: ``m=...;n=...;k=...;
  tile=...;s=...`` (any subset; a bare list is m): default ``m=256,128,64,32;n=4096;
  k=4096,14336;tile=wgmma128x64,wgmma128x128,64x64;s=1,2,4``.
* ``--provenance``: the GEMM notes of benchmarks/RESULTS.md in one process — the narrow-tile
  m = 128 rows (bf16 and f16), the split sweep, the k-sweep and the bias + gelu epilogue at
  16384 × 14336 × 4096; about 1-2 minutes on an H100 with a warm kernel cache (< 3).

Low precision (tf32, int8, fp8; :func:`run_lowp`), timed with the same :func:`interleaved`.
a is row-major (m, k); "NT" rows take b = w.T of a row-major (n, k) weight (the nn.Linear
layout), "NN" rows a row-major (k, n) b.  Checked like the bf16 rows (poisoned output, float64
reference of the same operands, bounds in ``benchmarks/gemm_check.py``):

* tf32: ``GemmPlan(GemmDescriptor(m, n, k, float32, allow_tf32=True))`` vs ``torch.matmul``
  with ``torch.backends.cuda.matmul.allow_tf32 = True`` (restored after); bound: both inputs
  rounded to tf32 (2^-11 each) + K·2^-24, f32 output.  Shapes 4096³ and 8192³ (NN),
  m ∈ {16, 4096} × (n, k) = (4096, 4096) (NT).  TFLOP/s.
* int8: ``IntGemmPlan`` (s8 · s8 → s32) vs ``torch._int_mm``; exact (the float64 reference of
  integers below 2^53 is exact).  Shapes 4096³, 8192³, m ∈ {4096, 16384} × (14336, 4096).  TOPS.
* fp8: ``Fp8GemmPlan`` (e4m3 · e4m3 → bf16) with per-tensor scales and with per-row scales vs
  ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=bfloat16)`` (torch's scales: () per
  tensor, (m, 1) / (1, n) per row, views of ours); bound: bf16 half-ulp + the sm90a wgmma
  accumulator model of gemm_check (``FP8_ACC_BITS``).  Shapes 4096³, 8192³,
  m ∈ {16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096)}.  TFLOP/s.
  "vs torch" is against torch's default ``use_fast_accum=False``; the ``use_fast_accum=True``
  rate (cuBLAS without periodic promotion of the fp8 sums) is an extra column.

All int8 / fp8 rows are NT (both operands k-major, which both libraries need).  When the fp8 plan
module is missing or the plan raises UnsupportedError (e.g. not wired for this device), its rows
say "skipped: ..." instead of failing.  ``--quick``: 4096³ of each kind (4 rows).
Budget: about 30 s on an H100 (28 rows, about 1 s each).
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import statistics
import time

from . import gemm_check as GC
from . import harness as H

SQUARES = (2048, 4096, 6144, 8192)
LLM_M = (1, 16, 128, 4096, 16384)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096))
DTYPES = ("bfloat16", "float16")
#: GemmPlan's epilogues (ops/gemm/gemm.py EPILOGUES; listed here so --help needs no import)
EPILOGUES = ("identity", "bias", "bias_relu", "bias_gelu", "bias_silu")
#: seconds of timed device work per row (all columns together), warm-up excluded
ROW_BUDGET_S = 0.6
#: ``--variants`` columns: (json key, header, forced ``tile=`` (None = the mma.sync tile rule),
#: forced ``splits=`` (None = the plan's heuristic))
VARIANTS = (("w128", "wgmma128x128", "wgmma128x128", None),
            ("w256", "wgmma128x256", "wgmma128x256", None),
            ("c2", "wgmma128x256c2", "wgmma128x256c2", None),
            ("mma", "mma.sync", None, None))
#: ``--k-sweep``: (m, n) and the k values
KSWEEP_MN = (16384, 14336)
KSWEEP_K = (64, 128, 256, 512, 1024, 2048, 4096)
#: ``--split-sweep`` defaults
SPLIT_SPEC = dict(m=(256, 128, 64, 32), n=(4096,), k=(4096, 14336),
                  tile=("wgmma128x64", "wgmma128x128", "64x64"), s=(1, 2, 4))
#: ``--provenance``: the narrow-tile rows and the epilogue row (``--match`` strings)
PROV_NARROW = ("m=128 n=4096 k=4096", "m=128 n=14336 k=4096", "m=128 n=4096 k=14336")
PROV_EPILOGUE = ("m=16384 n=14336 k=4096",)


# -- measurement (both sections) -------------------------------------------------------------
def rotating(fn, sets):
    """A zero-argument callable that calls ``fn(*sets[i])`` with i cycling over ``sets``."""
    it = itertools.cycle(list(sets))
    return lambda: fn(*next(it))


def interleaved(fns, *, warm: int = 3, budget_s: float = ROW_BUDGET_S, block_ms: float = 2.0,
                max_batch: int = 64, min_rounds: int = 5, max_rounds: int = 41):
    """Time every zero-argument callable of ``fns`` (e.g. ours, torch, variants) in alternating
    blocks on the current stream and return one :class:`harness.Timing` per callable (ms per
    call: median / min / p90 over the rounds).

    ``warm`` calls of each callable run first (module load, cuBLAS heuristics, allocator,
    clocks), then one calibration block of 2 calls each estimates the time per call.  The batch
    (calls per block, the same for every callable so host overhead is treated alike) makes the
    slowest callable's block at least ``block_ms`` (at most ``max_batch`` calls); the number of
    rounds fits ``budget_s`` (between ``min_rounds`` and ``max_rounds``).  Round r times the
    callables in order r, r+1, ... (rotated), so no callable always follows the same one.

    Device time, not host time: every timed block is queued behind a GPU sleep kernel long
    enough to cover the host's enqueueing of the whole block (``torch.cuda._sleep``), so the
    start event fires only when all of the block's launches are already queued — small problems
    (m = 1, 16) are not timed at the speed of the Python launch path.  That host cost is
    reported separately: ``Timing.host_us`` = median host µs per call (enqueue only)."""
    import time as _time

    torch = H._torch()
    s = torch.cuda.current_stream()
    fns = list(fns)
    for f in fns:
        for _ in range(warm):
            f()
    torch.cuda.synchronize()
    sleep = [0]

    def block(f, n):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        if sleep[0]:
            torch.cuda._sleep(sleep[0])
        e0.record(s)
        t0 = _time.perf_counter()
        for _ in range(n):
            f()
        host = (_time.perf_counter() - t0) / n * 1e6
        e1.record(s)
        e1.synchronize()
        return e0.elapsed_time(e1) / n, host

    host = [block(f, 4)[1] for f in fns]           # host µs per call (enqueue)
    # GPU clock cycles covering the enqueue of one block of the slowest-to-enqueue callable
    # (~2 GHz; 2x margin), filled in once the batch is known
    est = [block(f, 2)[0] for f in fns]
    slow = max(max(est), 1e-4)
    batch = max(1, min(max_batch, math.ceil(block_ms / slow)))
    sleep[0] = int(2 * max(host) * 1e-6 * batch * 2e9) + 100_000
    est = [block(f, batch)[0] for f in fns]          # device time per call, queue prefilled
    round_ms = sum(est) * batch + sleep[0] / 2e6 * len(fns)
    rounds = int(max(min_rounds, min(max_rounds, budget_s * 1e3 / max(round_ms, 1e-3))))
    ts = [[] for _ in fns]
    hs = [[] for _ in fns]
    for r in range(rounds):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            t, h = block(fns[i], batch)
            ts[i].append(t)
            hs[i].append(h)
    out = []
    for t, h in zip(ts, hs):
        t.sort()
        p90 = t[min(len(t) - 1, int(math.ceil(0.9 * len(t))) - 1)]
        tm = H.Timing(statistics.median(t), t[0], p90, len(t), batch)
        tm.host_us = statistics.median(h)
        out.append(tm)
    return out


def n_sets_for(*nbytes) -> int:
    """Operand sets to rotate: enough to exceed L2 three times when one set fits (harness)."""
    return H.n_sets(sum(nbytes), hi=6)


def kernel_name(tmpl, knobs) -> str:
    """``template:tile`` (``c2`` appended for the 2-CTA cluster SKU)."""
    from baracuda_dsl.jit import freeze_knobs

    knobs = dict(freeze_knobs(knobs))
    tile = knobs.get("tile", "simt")
    if int(knobs.get("cluster", 1)) > 1:
        tile += f"c{knobs['cluster']}"
    return f"{tmpl.name}:{tile}"


def warm_gpu(torch, seconds: float = 0.3) -> None:
    """About ``seconds`` of back-to-back 4096² bf16 matmuls, so the first row is not timed
    at idle clocks (benchmarks.run_all warms up too; standalone runs need this)."""
    x = torch.randn((4096, 4096), device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()


def _mma_tile(m, n):
    return ("16x32" if m <= 16 else
            "128x128" if math.ceil(m / 128) * math.ceil(n / 128) >= 96 else "64x64")


def runner(torch, plan):
    """``plan.run`` bound to a workspace of ``plan.workspace_size()`` bytes (split-K plans
    need one; allocated once, outside the timed region)."""
    nbytes = plan.workspace_size()
    ws = torch.empty((max(nbytes, 1),), device="cuda", dtype=torch.uint8) if nbytes else None

    def go(args):
        plan.run(args, workspace=ws)
    return go


def torch_gemm(torch, epilogue: str):
    """torch's (unfused) counterpart of a GemmPlan epilogue: ``f(a, b, c, bias)`` returning the
    result (written into ``c`` except for gelu, whose activation allocates)."""
    F = torch.nn.functional
    if epilogue == "identity":
        return lambda a, b, c, bias: torch.mm(a, b, out=c)
    if epilogue == "bias":
        return lambda a, b, c, bias: torch.addmm(bias, a, b, out=c)
    if epilogue == "bias_relu":
        return lambda a, b, c, bias: torch.relu_(torch.addmm(bias, a, b, out=c))
    if epilogue == "bias_gelu":
        return lambda a, b, c, bias: F.gelu(torch.addmm(bias, a, b, out=c))
    if epilogue == "bias_silu":
        return lambda a, b, c, bias: F.silu(torch.addmm(bias, a, b, out=c), inplace=True)
    raise ValueError(f"unknown epilogue {epilogue!r}; choose from {', '.join(EPILOGUES)}")


def case_name(dtype, m, n, k, nt, epilogue="identity") -> str:
    return (f"{dtype} {'NT' if nt else 'NN'} m={m} n={n} k={k}"
            + ("" if epilogue == "identity" else f" +{epilogue}"))


def _plan_kernel(plan, args) -> str:
    """``template:tile`` of ``plan`` for ``args`` (`` splitS`` when split over k)."""
    tk, _ = H.safe(plan.kernel_for, args)
    name = kernel_name(*tk) if tk else str(getattr(plan.sku(), "template", "?"))
    s = getattr(plan, "splits", 1)
    return name + (f" split{s}" if s > 1 else "")


# -- cases -----------------------------------------------------------------------------------
def _case(torch, dtype, m, n, k, nt, variants=(), epilogue: str = "identity"):
    """One row: the default plan, cuBLAS and every ``variants`` entry ((key, label, tile,
    splits): a forced ``GemmTuning``; tile None = the mma.sync tile rule) — each checked on its
    own poisoned output against the float64 reference, then timed interleaved (variants that
    fail their check or cannot be planned are not timed)."""
    from baracuda_dsl import GemmTuning, PlanPreference
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    C = GC.shared_checks()
    tdt = getattr(torch, dtype)
    has_bias = epilogue != "identity"
    esz = torch.empty((), dtype=tdt).element_size()
    ns = n_sets_for(m * k * esz, n * k * esz, m * n * esz)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda", dtype=tdt)
        if nt:
            b = torch.randn((n, k), device="cuda", dtype=tdt).t()   # (k, n), k-major
        else:
            b = torch.randn((k, n), device="cuda", dtype=tdt)
        bias = torch.randn((n,), device="cuda", dtype=tdt) if has_bias else None
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=tdt), bias))
    desc = GemmDescriptor(m, n, k, dtype, epilogue=epilogue)
    plan = GemmPlan.select(desc)
    args = [GemmArgs(a, b, c, bias) for a, b, c, bias in sets]
    a, b, c, bias = sets[0]
    bound = GC.half_bound(dtype, k, epilogue)
    act = GC.ref_act(torch, epilogue)
    tfn = torch_gemm(torch, epilogue)
    go = runner(torch, plan)
    # checked runs: ours and cuBLAS, each into a NaN-poisoned output
    C.poison_(torch, c)
    go(args[0])
    ct = C.poison(torch, (m, n), tdt)
    tres = tfn(a, b, ct, bias)
    chk = GC.check_gemm(torch, a, b, {"ours": c, "torch": tres}, bound, bias=bias, act=act)
    del tres
    ours, theirs = chk["ours"], chk["torch"]
    row = dict(case=case_name(dtype, m, n, k, nt, epilogue), dtype=dtype,
               layout="NT" if nt else "NN", m=m, n=n, k=k, epilogue=epilogue,
               kernel=_plan_kernel(plan, args[0]), err=ours.rel_err, worst=ours.worst,
               ok=ours.ok, check=ours.as_dict(), torch_err=theirs.rel_err,
               torch_ok=theirs.ok, torch_check=theirs.as_dict(), bound=bound.describe(),
               sets=ns, variants=[])
    fns = [rotating(go, [(x,) for x in args]), rotating(tfn, sets)]
    timed = []
    on_sm90 = plan.sku().arch.value == "sm90a"
    for key, label, tile, splits in variants:
        v = dict(key=key, label=label)
        row["variants"].append(v)
        if not on_sm90:
            v["error"] = "not an sm90a device"
            continue
        tuning = GemmTuning(tile=tile or _mma_tile(m, n), splits=splits)
        p2, e = H.safe(GemmPlan.select, desc, PlanPreference(tuning=tuning))
        if p2 is None:                      # not wired for this problem: "—"
            v["error"] = e
            continue
        go2 = runner(torch, p2)
        vargs = GemmArgs(a, b, C.poison_(torch, ct), bias)   # its own poisoned output
        v["kernel"] = _plan_kernel(p2, vargs)
        _, e = H.safe(go2, vargs)
        if e:
            v["error"] = e
            continue
        r = GC.check_gemm(torch, a, b, {"v": ct}, bound, bias=bias, act=act)["v"]
        v.update(ok=r.ok, err=r.rel_err, worst=r.worst, check=r.as_dict())
        if r.ok:
            fns.append(rotating(go2, [(x,) for x in args]))
            timed.append(v)
        else:
            row[f"{key}_tflops"] = float("nan")  # a failing variant shows "nan", untimed
    del ct
    ts = interleaved(fns)
    fl = 2.0 * m * n * k
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min,
               torch_ms_min=ts[1].min, rounds=ts[0].samples, batch=ts[0].batch,
               us=ts[0].median * 1e3, torch_us=ts[1].median * 1e3,
               host_us=ts[0].host_us, torch_host_us=ts[1].host_us,
               tflops=fl / ts[0].median / 1e9, torch_tflops=fl / ts[1].median / 1e9)
    for v, t in zip(timed, ts[2:]):
        v.update(ms=t.median, us=t.median * 1e3, host_us=t.host_us, tflops=fl / t.median / 1e9,
                 vs_torch=ts[1].median / t.median)
        row[f"{v['key']}_tflops"] = v["tflops"]
    return row


def cases(quick: bool):
    """(m, n, k, nt) of one dtype, in run order."""
    out = [(s, s, s, False) for s in (SQUARES[:2] if quick else SQUARES)]
    for n, k in (LLM_NK[:1] if quick else LLM_NK):
        out += [(m, n, k, True) for m in LLM_M]
    return out


def wanted(case: str, match) -> bool:
    """True when ``match`` (substrings, e.g. ("m=16 ", "n=128256")) is empty or one of them
    occurs in the case name (``--match``)."""
    return not match or any(x in case + " " for x in match)


def _check_cell(r: dict) -> str:
    """'ok (rel err, worst of bound)' / 'FAIL (...)' of a row or variant's check dict."""
    c = r.get("check") or {}
    if not c:
        return "—"
    return GC.Result(c["ok"], c["rel_err"], c["worst"], c["n_bad"], c["n"], c.get("msg")).short()


def _line(r) -> str:
    s = (f"{r['case']}: {r['kernel']} {r['us']:.1f} us (host {r['host_us']:.1f}) "
         f"{r['tflops']:.1f} TFLOP/s (cuBLAS {r['torch_us']:.1f} us, host "
         f"{r['torch_host_us']:.1f}, {r['torch_tflops']:.1f}; x{r['torch_ms'] / r['ms']:.2f}) "
         f"check {_check_cell(r)}; cuBLAS {'ok' if r['torch_ok'] else 'off-bound'} "
         f"({r['torch_err']:.1e})")
    extra = [f"{v['label']} {H.fmt(v.get('tflops'), '.1f') if 'error' not in v else '—'}"
             + ("" if v.get("ok", True) else " FAIL") for v in r.get("variants", ())]
    return s + (" | " + ", ".join(extra) if extra else "")


def _guarded(torch, case, fn, *a, log=print, tag="gemm", **kw):
    """``fn(torch, *a, **kw)`` under harness.safe: the row, or ``dict(case=..., error=...)``
    (logged either way); empties the CUDA cache after."""
    r, err = H.safe(fn, torch, *a, **kw)
    if err:
        r = dict(case=case, error=err)
        log(f"{tag}: {case}: {err}")
    else:
        log(f"{tag}: {_line(r)}")
    torch.cuda.empty_cache()
    return r


def run(out_dir=None, quick: bool = False, log=print, variants: bool = False,
        dtypes=None, match=(), epilogue: str = "identity",
        json_name: str = "bench_gemm.json") -> dict:
    """All rows (bf16 then f16; ``quick``: bf16 subset; ``match``: see :func:`wanted`;
    ``epilogue``: GemmPlan's fused epilogue vs torch's addmm + activation), each under
    harness.safe."""
    torch = H._torch()
    t0 = time.perf_counter()
    dts = dtypes or (DTYPES[:1] if quick else DTYPES)
    warm_gpu(torch)
    rows = []
    for dt in dts:
        for m, n, k, nt in cases(quick):
            case = case_name(dt, m, n, k, nt, epilogue)
            if not wanted(case, match):
                continue
            r = _guarded(torch, case, _case, dt, m, n, k, nt, VARIANTS if variants else (),
                         epilogue, log=log)
            r.setdefault("dtype", dt)
            rows.append(r)
    return H.save_json(dict(rows=rows, variants=variants, epilogue=epilogue,
                            wall_s=time.perf_counter() - t0), out_dir, json_name)


def _pair(us, host) -> list:
    """The adjacent (device µs, host µs per call) cells."""
    return [H.fmt(us, ".1f"), H.fmt(host, ".1f")]


def markdown(res: dict) -> str:
    """One table row per case (dtype and shape in the first column): device µs and host µs per
    call of ours and of cuBLAS side by side (host > device: host-bound in real use)."""
    var = bool(res.get("variants"))
    hdr = ["case", "kernel", "ours device µs", "ours host µs/call", "TFLOP/s",
           "cuBLAS device µs", "cuBLAS host µs/call", "cuBLAS TFLOP/s", "vs cuBLAS (device)"]
    if var:
        hdr += [h for _, h, _, _ in VARIANTS]
    hdr += ["check (f64 ref: rel err, worst of bound)", "cuBLAS vs same bound"]
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append([r["case"]] + ["—"] * (len(hdr) - 2) + [r["error"]])
            continue
        row = [r["case"], r["kernel"], *_pair(r["us"], r["host_us"]), H.fmt(r["tflops"], ".1f"),
               *_pair(r["torch_us"], r["torch_host_us"]), H.fmt(r["torch_tflops"], ".1f"),
               H.fmt(r["torch_ms"] / r["ms"])]
        if var:
            vs = {v["key"]: v for v in r.get("variants", ())}
            for key, _, _, _ in VARIANTS:
                v = vs.get(key, {})
                row.append("—" if "error" in v or not v else
                           H.fmt(v.get("tflops"), ".1f") if v.get("ok") else "FAIL")
        row += [_check_cell(r), f"{'ok' if r['torch_ok'] else 'off'} ({r['torch_err']:.1e})"]
        out.append(row)
    return H.md_table(hdr, out) + "\n"


# -- sweeps ----------------------------------------------------------------------------------
def _fit(xs, ys):
    """Least-squares ``y = a + b·x``: (a, b) or (None, None) with fewer than 2 points."""
    if len(xs) < 2:
        return None, None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None, None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def run_ksweep(out_dir=None, log=print, dtype: str = "bfloat16", mn=KSWEEP_MN, ks=KSWEEP_K,
               epilogue: str = "identity") -> dict:
    """Default plan vs cuBLAS at (m, n) = ``mn`` (NT) for every k of ``ks``; the least-squares
    line ms = a + b·k over the rows that passed (a: fixed per-tile cost)."""
    torch = H._torch()
    t0 = time.perf_counter()
    warm_gpu(torch)
    m, n = mn
    rows = [_guarded(torch, case_name(dtype, m, n, k, True, epilogue), _case, dtype, m, n, k,
                     True, (), epilogue, log=log, tag="gemm k-sweep") for k in ks]
    good = [r for r in rows if "error" not in r and r.get("ok")]
    a, b = _fit([r["k"] for r in good], [r["ms"] for r in good])
    ta, tb = _fit([r["k"] for r in good], [r["torch_ms"] for r in good])
    fit = dict(intercept_ms=a, slope_ms_per_k=b, torch_intercept_ms=ta, torch_slope_ms_per_k=tb,
               points=len(good))
    if a is not None:
        log(f"gemm k-sweep: fit ms = {a:.4f} + {b * 1e3:.4f}e-3 · k (cuBLAS {ta:.4f} + "
            f"{tb * 1e3:.4f}e-3 · k)")
    return H.save_json(dict(rows=rows, fit=fit, m=m, n=n, dtype=dtype, epilogue=epilogue,
                            wall_s=time.perf_counter() - t0), out_dir, "bench_gemm_ksweep.json")


def markdown_ksweep(res: dict) -> str:
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append([r["case"]] + ["—"] * 5 + [r["error"]])
            continue
        out.append([r["case"], r["kernel"], H.fmt(r["ms"], ".4f"), H.fmt(r["host_us"], ".1f"),
                    H.fmt(r["torch_ms"], ".4f"), H.fmt(r["torch_ms"] / r["ms"]), _check_cell(r)])
    t = H.md_table(("case", "kernel", "ours device ms", "ours host µs/call", "cuBLAS device ms",
                    "vs cuBLAS", "check (f64 ref)"), out)
    f = res.get("fit") or {}
    if f.get("intercept_ms") is not None:
        t += (f"\n\nLeast-squares fit over {f['points']} k values: ours ms = "
              f"{f['intercept_ms']:.4f} + {f['slope_ms_per_k'] * 1e3:.5f}e-3 · k; cuBLAS "
              f"{f['torch_intercept_ms']:.4f} + {f['torch_slope_ms_per_k'] * 1e3:.5f}e-3 · k")
    return t + "\n"


def parse_sweep_spec(spec: str) -> dict:
    """``"m=256,64,32;k=4096,14336"`` (keys m, n, k, tile, s; ';' or spaces between them; a
    bare list is m) → :data:`SPLIT_SPEC` with those keys replaced."""
    out = dict(SPLIT_SPEC)
    for part in re.split(r"[;\s]+", (spec or "").strip()):
        if not part:
            continue
        key, _, vals = part.rpartition("=")
        key = key or "m"
        if key not in out:
            raise ValueError(f"split-sweep: unknown key {key!r} (m, n, k, tile, s)")
        items = tuple(v for v in vals.split(",") if v)
        if not items:
            raise ValueError(f"split-sweep: empty list for {key}")
        out[key] = items if key == "tile" else tuple(int(v) for v in items)
    return out


def run_split_sweep(out_dir=None, log=print, dtype: str = "bfloat16", spec=None) -> dict:
    """Every (m, n, k) of the spec (NT): the default plan, cuBLAS and each forced
    ``GemmTuning(tile, splits)``, checked and timed interleaved."""
    torch = H._torch()
    t0 = time.perf_counter()
    sp = spec or dict(SPLIT_SPEC)
    warm_gpu(torch)
    variants = [(f"{t}/S{s}", f"{t} S={s}", t, s) for t in sp["tile"] for s in sp["s"]]
    rows = []
    for m in sp["m"]:
        for n in sp["n"]:
            for k in sp["k"]:
                rows.append(_guarded(torch, case_name(dtype, m, n, k, True), _case, dtype, m, n,
                                     k, True, variants, log=log, tag="gemm split-sweep"))
    return H.save_json(dict(rows=rows, spec={k: list(v) for k, v in sp.items()}, dtype=dtype,
                            wall_s=time.perf_counter() - t0), out_dir, "bench_gemm_split.json")


def markdown_split(res: dict) -> str:
    """Long format: per shape the default plan, cuBLAS, then one line per forced variant."""
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append([r["case"], "—", "—", "—", "—", "—", r["error"]])
            continue
        out.append([r["case"], f"default: {r['kernel']}", H.fmt(r["us"], ".1f"),
                    H.fmt(r["host_us"], ".1f"), H.fmt(r["tflops"], ".1f"),
                    H.fmt(r["torch_ms"] / r["ms"]), _check_cell(r)])
        out.append([r["case"], "cuBLAS", H.fmt(r["torch_us"], ".1f"),
                    H.fmt(r["torch_host_us"], ".1f"), H.fmt(r["torch_tflops"], ".1f"), "1.00",
                    f"{'ok' if r['torch_ok'] else 'off'} ({r['torch_err']:.1e})"])
        for v in r.get("variants", ()):
            if "error" in v:
                out.append([r["case"], v["label"], "—", "—", "—", "—", v["error"][:120]])
                continue
            out.append([r["case"], f"{v['label']} ({v.get('kernel', '?')})",
                        H.fmt(v.get("us"), ".1f"), H.fmt(v.get("host_us"), ".1f"),
                        H.fmt(v.get("tflops"), ".1f"), H.fmt(v.get("vs_torch")), _check_cell(v)])
    return H.md_table(("case", "kernel", "device µs", "host µs/call", "TFLOP/s",
                       "vs cuBLAS (device)", "check (f64 ref)"), out) + "\n"


def run_provenance(out_dir=None, log=print, dtype: str = "bfloat16") -> dict:
    """The GEMM notes of benchmarks/RESULTS.md in one process: narrow-tile m = 128 rows (bf16 and
    f16), the split sweep, the k-sweep and the bias + gelu epilogue at 16384 × 14336 × 4096."""
    t0 = time.perf_counter()
    res = dict(narrow=run(out_dir, log=log, dtypes=DTYPES, match=PROV_NARROW,
                          json_name="bench_gemm_narrow.json"),
               split=run_split_sweep(out_dir, log=log, dtype=dtype),
               ksweep=run_ksweep(out_dir, log=log, dtype=dtype),
               epilogue=run(out_dir, log=log, dtypes=(dtype,), match=PROV_EPILOGUE,
                            epilogue="bias_gelu", json_name="bench_gemm_epilogue.json"))
    res["wall_s"] = time.perf_counter() - t0
    log(f"gemm provenance: {res['wall_s']:.0f} s")
    return H.save_json(res, out_dir, "bench_gemm_provenance.json")


def markdown_provenance(res: dict) -> str:
    return "\n".join([
        "### Narrow tile, m = 128", "", markdown(res["narrow"]),
        "### Split sweep", "", markdown_split(res["split"]),
        "### k sweep", "", markdown_ksweep(res["ksweep"]),
        "### bias + gelu epilogue", "", markdown(res["epilogue"]),
        f"wall {res['wall_s']:.0f} s", ""])


# ==================================================================== tf32, int8, fp8 (gemm_lowp)
KINDS = ("tf32", "int8", "fp8")
TF32_CASES = ((4096, 4096, 4096, False), (8192, 8192, 8192, False),
              (16, 4096, 4096, True), (4096, 4096, 4096, True))
INT8_CASES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096), (16384, 14336, 4096))
FP8_SQUARES = (4096, 8192)
FP8_M = (16, 128, 4096, 16384)
FP8_NK = ((4096, 4096), (14336, 4096))


def fp8_cases(quick: bool):
    """(m, n, k, per_row) in run order."""
    shapes = [(s, s, s) for s in (FP8_SQUARES[:1] if quick else FP8_SQUARES)]
    if not quick:
        shapes += [(m, n, k) for n, k in FP8_NK for m in FP8_M]
    return [(m, n, k, pr) for m, n, k in shapes for pr in (False, True)]


def _out_ok(fn) -> bool:
    """Whether ``fn`` (a torch call with ``out=``, a preallocated output) runs on this torch."""
    return H.safe(fn)[1] is None


def _checked(row, chk):
    """Put the ``check_gemm`` verdicts of "ours" and "torch" into ``row``."""
    ours, theirs = chk["ours"], chk["torch"]
    row.update(err=ours.rel_err, worst=ours.worst, ok=ours.ok, check=ours.as_dict(),
               torch_err=theirs.rel_err, torch_ok=theirs.ok, torch_check=theirs.as_dict())
    return row


def _timed(row, fns, flops, unit, extra=()):
    """Time ``fns`` (ours, torch, then one per name in ``extra``) interleaved into ``row``:
    device ms (CUDA events) and host µs per call (enqueue) of each."""
    ts = interleaved(fns)
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min, torch_ms_min=ts[1].min,
               us=ts[0].median * 1e3, torch_us=ts[1].median * 1e3,
               host_us=ts[0].host_us, torch_host_us=ts[1].host_us,
               rounds=ts[0].samples, batch=ts[0].batch, unit=unit,
               rate=flops / ts[0].median / 1e9, torch_rate=flops / ts[1].median / 1e9)
    for key, t in zip(extra, ts[2:]):
        row.update({f"{key}_ms": t.median, f"{key}_rate": flops / t.median / 1e9})
    return row


# -- tf32 ------------------------------------------------------------------------------------
def _tf32(torch, m, n, k, nt):
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    C = GC.shared_checks()
    ns = n_sets_for(4 * m * k, 4 * n * k, 4 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda")
        b = torch.randn((n, k), device="cuda").t() if nt else torch.randn((k, n), device="cuda")
        sets.append((a, b, torch.empty((m, n), device="cuda")))
    plan = GemmPlan.select(GemmDescriptor(m, n, k, "float32", allow_tf32=True))
    args = [GemmArgs(*s) for s in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c = sets[0]
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        C.poison_(torch, c)
        plan.run(args[0])
        ct = C.poison(torch, (m, n), torch.float32)
        torch.mm(a, b, out=ct)
        chk = GC.check_gemm(torch, a, b, {"ours": c, "torch": ct}, GC.tf32_bound(k))
        del ct
        row = _checked(dict(case=f"tf32 {'NT' if nt else 'NN'} m={m} n={n} k={k}", kind="tf32",
                            m=m, n=n, k=k, kernel=kernel_name(tmpl, knobs), sets=ns,
                            bound=GC.tf32_bound(k).describe()), chk)
        return _timed(row, [rotating(plan.run, [(x,) for x in args]),
                            rotating(lambda a, b, c: torch.mm(a, b, out=c), sets)],
                      2.0 * m * n * k, "TFLOP/s")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# -- int8 ------------------------------------------------------------------------------------
def _int8(torch, m, n, k):
    from baracuda_dsl.ops.gemm.gemm_int import IntGemmArgs, IntGemmDescriptor, IntGemmPlan

    C = GC.shared_checks()
    ns = n_sets_for(m * k, n * k, 4 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8).t()
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=torch.int32),
                     torch.empty((m, n), device="cuda", dtype=torch.int32)))
    plan = IntGemmPlan.select(IntGemmDescriptor(m, n, k))
    args = [IntGemmArgs(a, b, c) for a, b, c, _ in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c, ct = sets[0]
    C.poison_(torch, c)                                   # iinfo(int32).max
    plan.run(args[0])
    tref = torch._int_mm(a, b)
    chk = GC.check_gemm(torch, a, b, {"ours": c, "torch": tref}, GC.int_bound())
    del tref
    row = _checked(dict(case=f"int8 NT m={m} n={n} k={k}", kind="int8", m=m, n=n, k=k,
                        kernel=kernel_name(tmpl, knobs), sets=ns, bound="exact"), chk)
    if not _out_ok(lambda: torch._int_mm(a, b, out=ct)):
        tsets = [(x, y) for x, y, _, _ in sets]
        torch_fn = rotating(lambda x, y: torch._int_mm(x, y), tsets)
    else:
        torch_fn = rotating(lambda x, y, z: torch._int_mm(x, y, out=z),
                              [(x, y, z) for x, y, _, z in sets])
    return _timed(row, [rotating(plan.run, [(x,) for x in args]), torch_fn],
                  2.0 * m * n * k, "TOPS")


# -- fp8 -------------------------------------------------------------------------------------
def _fp8_module():
    """(module, None) or (None, reason)."""
    try:
        from baracuda_dsl.ops.gemm import gemm_fp8
    except Exception as e:  # noqa: BLE001 - any import failure skips the fp8 rows
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:200]
    return gemm_fp8, None


def _fp8(torch, F, m, n, k, per_row):
    from baracuda_dsl.errors import UnsupportedError

    C = GC.shared_checks()
    f8 = torch.float8_e4m3fn
    case = f"fp8 e4m3 NT m={m} n={n} k={k} {'per-row' if per_row else 'per-tensor'}"
    ns = n_sets_for(m * k, n * k, 2 * m * n)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda").to(f8)
        b = torch.randn((n, k), device="cuda").to(f8).t()           # (k, n) column-major
        sa = torch.rand((m if per_row else 1,), device="cuda") + 0.5
        sb = torch.rand((n if per_row else 1,), device="cuda") + 0.5
        # torch's scale shapes: () per tensor, (m, 1) / (1, n) per row (views of ours)
        tsa, tsb = (sa.view(m, 1), sb.view(1, n)) if per_row else (sa.view(()), sb.view(()))
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=torch.bfloat16), sa, sb,
                     tsa, tsb, torch.empty((m, n), device="cuda", dtype=torch.bfloat16)))
    try:
        plan = F.Fp8GemmPlan.select(F.Fp8GemmDescriptor(m, n, k))
        args = [F.Fp8GemmArgs(a, b, c, sa, sb) for a, b, c, sa, sb, _, _, _ in sets]
        plan.can_implement(args[0])
    except UnsupportedError as e:
        return dict(case=case, kind="fp8", skipped=f"UnsupportedError: {e}".splitlines()[0][:200])
    kernel = _plan_kernel(plan, args[0])
    a, b, c, sa, sb, tsa, tsb, ct = sets[0]
    go = runner(torch, plan)                       # split-K plans need a workspace
    C.poison_(torch, c)
    go(args[0])
    tref = torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16)
    bound = GC.fp8_bound("bfloat16", k, wgmma=kernel.startswith("gemm_sm90"))
    chk = GC.check_gemm(torch, a, b, {"ours": c, "torch": tref}, bound, scale_a=sa, scale_b=sb)
    del tref
    row = _checked(dict(case=case, kind="fp8", m=m, n=n, k=k, per_row=per_row, kernel=kernel,
                        sets=ns, bound=bound.describe()), chk)
    use_out = _out_ok(lambda: torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16,
                                               out=ct))

    def torch_fn(fast: bool):
        def f(x, y, s1, s2, z):
            if use_out:
                return torch._scaled_mm(x, y, s1, s2, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast, out=z)
            return torch._scaled_mm(x, y, s1, s2, out_dtype=torch.bfloat16, use_fast_accum=fast)
        return rotating(f, [(x, y, s1, s2, z) for x, y, _, _, _, s1, s2, z in sets])

    fns = [rotating(go, [(x,) for x in args]), torch_fn(False)]
    # cuBLAS's fast-accumulation mode (no periodic promotion of the fp8 MMA sums) as a third
    # column: the headline ratio is against torch's default (use_fast_accum=False)
    fast_ok = H.safe(lambda: torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16,
                                              use_fast_accum=True))[1] is None
    if fast_ok:
        fns.append(torch_fn(True))
    return _timed(row, fns, 2.0 * m * n * k, "TFLOP/s", extra=("torch_fast",) if fast_ok else ())


# -- low-precision driver ------------------------------------------------------------------
def _lowp_line(r) -> str:
    if r.get("skipped"):
        return f"{r['case']}: skipped ({r['skipped']})"
    return (f"{r['case']}: {r['kernel']} {r['us']:.1f} us (host {r['host_us']:.1f}) "
            f"{r['rate']:.1f} {r['unit']} (torch {r['torch_us']:.1f} us, host "
            f"{r['torch_host_us']:.1f}, {r['torch_rate']:.1f}, x{r['torch_ms'] / r['ms']:.2f}"
            + (f"; fast-accum {r['torch_fast_rate']:.1f}" if "torch_fast_rate" in r else "")
            + f") check {_check_cell(r)}")


def run_lowp(out_dir=None, quick: bool = False, log=print, kinds=KINDS, match=()) -> dict:
    """Rows of every kind in ``kinds`` (tf32, int8, fp8) whose case name matches ``match``
    (:func:`wanted`), each under harness.safe."""
    torch = H._torch()
    t0 = time.perf_counter()
    warm_gpu(torch)
    jobs = []
    if "tf32" in kinds:
        jobs += [(f"tf32 {'NT' if nt else 'NN'} m={m} n={n} k={k}", _tf32, (m, n, k, nt))
                 for m, n, k, nt in (TF32_CASES[:1] if quick else TF32_CASES)]
    if "int8" in kinds:
        jobs += [(f"int8 NT m={m} n={n} k={k}", _int8, (m, n, k))
                 for m, n, k in (INT8_CASES[:1] if quick else INT8_CASES)]
    rows = []
    if "fp8" in kinds:
        F, why = _fp8_module()
        for m, n, k, pr in fp8_cases(quick):
            case = f"fp8 e4m3 NT m={m} n={n} k={k} {'per-row' if pr else 'per-tensor'}"
            if F is None:
                jobs.append((case, None, f"fp8 plan module unavailable ({why})"))
            else:
                jobs.append((case, lambda torch, *c, F=F: _fp8(torch, F, *c), (m, n, k, pr)))
    for case, fn, c in jobs:
        if not wanted(case, match):
            continue
        if fn is None:
            r = dict(case=case, kind=case.split()[0], skipped=c)
        else:
            r, err = H.safe(fn, torch, *c)
            if err:
                r = dict(case=case, kind=case.split()[0], error=err)
        log(f"gemm_lowp: {r['case']}: {r['error']}" if r.get("error") else
            f"gemm_lowp: {_lowp_line(r)}")
        rows.append(r)
        torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, wall_s=time.perf_counter() - t0), out_dir,
                       "bench_gemm_lowp.json")


def markdown_lowp(res: dict) -> str:
    """One table row per case (kind, shape and scale mode in the first column); device µs and
    host µs per call of ours and torch side by side."""
    hdr = ("case", "kernel", "ours device µs", "ours host µs/call", "ours rate",
           "torch device µs", "torch host µs/call", "torch rate", "vs torch (device)",
           "torch fast-accum rate", "check (f64 ref: rel err, worst of bound)",
           "torch vs same bound")
    out = []
    for r in res["rows"]:
        if r.get("error") or r.get("skipped"):
            msg = r.get("error") or f"skipped: {r['skipped']}"
            out.append([r["case"]] + ["—"] * (len(hdr) - 2) + [msg])
            continue
        out.append([r["case"], r["kernel"], *_pair(r["us"], r["host_us"]),
                    f"{H.fmt(r['rate'], '.1f')} {r['unit']}",
                    *_pair(r["torch_us"], r["torch_host_us"]), H.fmt(r["torch_rate"], ".1f"),
                    H.fmt(r["torch_ms"] / r["ms"]), H.fmt(r.get("torch_fast_rate"), ".1f"),
                    _check_cell(r),
                    f"{'ok' if r['torch_ok'] else 'off'} ({r['torch_err']:.1e})"])
    return H.md_table(hdr, out) + "\n"


SECTIONS = (H.Section("gemm", "GEMM (bf16 / f16 vs cuBLAS)", run, markdown),
            H.Section("gemm_lowp", "GEMM: tf32, int8, fp8 (vs torch.matmul, _int_mm, _scaled_mm)",
                      run_lowp, markdown_lowp))


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--quick", action="store_true",
                    help="bf16 7 rows and 4096³ of each low-precision kind (smoke test)")
    ap.add_argument("--variants", action="store_true",
                    help="also time each forced sm90a kernel (wgmma128x128 / 128x256 / "
                         "128x256c2 / mma.sync) in the same rounds (bf16 / f16 rows), each "
                         "checked on its own poisoned output")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated subset of " + ",".join(DTYPES + KINDS)
                         + " (default all; the sweeps take one of bfloat16 / float16, "
                           "default bfloat16)")
    ap.add_argument("--match", default="",
                    help="comma-separated substrings of case names to run (e.g. "
                         "'n=128256,m=16 ,per-row'; a trailing space ends a number); default all")
    ap.add_argument("--epilogue", default="identity", choices=EPILOGUES,
                    help="GemmPlan's fused epilogue for the bf16 / f16 rows and --k-sweep "
                         "(bias (n,) in the output dtype; torch runs addmm + activation; the "
                         "tf32 / int8 / fp8 rows are skipped unless identity)")
    ap.add_argument("--k-sweep", action="store_true",
                    help=f"only the k sweep: m, n = {KSWEEP_MN}, k in {KSWEEP_K} (NT), with the "
                         "least-squares intercept (fixed per-tile cost)")
    ap.add_argument("--split-sweep", nargs="?", const="", default=None, metavar="SPEC",
                    help="only the split sweep: forced tile x splits at small m; SPEC "
                         "'m=256,128,64,32;n=4096;k=4096,14336;tile=wgmma128x64,wgmma128x128,"
                         "64x64;s=1,2,4' (any subset; default all of that)")
    ap.add_argument("--provenance", action="store_true",
                    help="only the RESULTS.md GEMM notes: narrow m=128 rows, split sweep, "
                         "k sweep, bias_gelu at 16384x14336x4096 (< 3 min on an H100)")
    ap.add_argument("--out", help="directory for the bench_gemm*.json files")
    a = ap.parse_args(argv)
    asked = tuple(a.dtypes.split(",")) if a.dtypes else None
    unknown = sorted(set(asked or ()) - set(DTYPES + KINDS))
    if unknown:
        ap.error(f"unknown dtype(s) {','.join(unknown)}; choose from {','.join(DTYPES + KINDS)}")
    dts = tuple(d for d in asked if d in DTYPES) if asked else None
    kinds = tuple(d for d in asked if d in KINDS) if asked else KINDS
    match = tuple(x for x in a.match.split(",") if x)
    spec = None
    if a.split_sweep is not None:
        try:
            spec = parse_sweep_spec(a.split_sweep)
        except ValueError as e:
            ap.error(str(e))
    sweep_dt = (dts or DTYPES)[0]
    if a.k_sweep or spec is not None or a.provenance:
        H.check_cuda()
        if a.provenance:
            print(markdown_provenance(run_provenance(a.out, dtype=sweep_dt)))
        if spec is not None:
            print(markdown_split(run_split_sweep(a.out, dtype=sweep_dt, spec=spec)))
        if a.k_sweep:
            print(markdown_ksweep(run_ksweep(a.out, dtype=sweep_dt, epilogue=a.epilogue)))
        return
    H.check_cuda()
    if dts is None or dts:
        print(markdown(run(a.out, a.quick, variants=a.variants, dtypes=dts, match=match,
                           epilogue=a.epilogue)))
    if kinds and a.epilogue == "identity":
        print(markdown_lowp(run_lowp(a.out, a.quick, kinds=kinds, match=match)))


if __name__ == "__main__":
    main()
