"""GEMM benchmarks: GemmPlan bf16 / f16 against torch.matmul (cuBLAS) (section ``gemm``) and the
low-precision GEMMs tf32, int8, fp8 against torch (section ``gemm_lowp``), measured interleaved.

Ours and torch run in the same process on the GPU host.  Usage (from the repo root)::

    python3 -m benchmarks.gemm [--quick] [--variants]
                               [--dtypes bfloat16,float16,tf32,int8,fp8]
                               [--match SUBSTR,...] [--out DIR]

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

Per row: the default plan's kernel (``plan.kernel_for(args)``: template and tile), ms, TFLOP/s
(2·m·n·k / time), cuBLAS TFLOP/s, "vs cuBLAS" = torch time / ours (1.0 = parity) and the
relative Frobenius error of our c against torch's (must be < 2e-2; checked before timing).
``--variants`` adds, on sm90a devices, one column per forced kernel (``tile=`` wgmma128x128,
wgmma128x256, wgmma128x256c2 and the mma.sync tile), timed in the same interleaved rounds.
``--quick``: bf16 only, squares 2048 / 4096 and the (4096, 4096) LLM shapes (7 rows).

Measurement (:func:`interleaved`, for both sections): a fixed warm-up of every callable, then
rounds that alternate blocks of back-to-back calls (ours, torch, ours, torch, ...; each block
bracketed by CUDA events), so clock / power drift hits every column alike; the median block
time per call of each callable is reported.  Block size and round count adapt so
one row costs about ``ROW_BUDGET_S`` seconds of timing.  Problems whose operands fit in L2
rotate over several operand sets (METHOD.md: repeated runs over one buffer measure the cache).
Rows whose kernel is faster than the host path (m = 1, 16) measure the enqueue rate of each
side (plan.run vs torch.mm dispatch), as in real use.  Budget on an H100: default run (48 rows)
about 1 minute (well under 2), ``--variants`` about 2-3 minutes, ``--quick`` about 10 s —
assuming every SKU is already in the kernel cache (a cache miss compiles at first use).

Low precision (tf32, int8, fp8; :func:`run_lowp`), timed with the same :func:`interleaved`.
a is row-major (m, k); "NT" rows take b = w.T of a row-major (n, k) weight (the nn.Linear
layout), "NN" rows a row-major (k, n) b.

* tf32: ``GemmPlan(GemmDescriptor(m, n, k, float32, allow_tf32=True))`` vs ``torch.matmul``
  with ``torch.backends.cuda.matmul.allow_tf32 = True`` (restored after); error vs the strict
  f32 ``torch.matmul`` (tf32 ≈ 3e-4; ok < 2e-3).  Shapes 4096³ and 8192³ (NN), m ∈ {16, 4096}
  × (n, k) = (4096, 4096) (NT).  TFLOP/s.
* int8: ``IntGemmPlan`` (s8 · s8 → s32) vs ``torch._int_mm``; ok = bit-equal to torch's int32.
  Shapes 4096³, 8192³, m ∈ {4096, 16384} × (14336, 4096).  TOPS.
* fp8: ``Fp8GemmPlan`` (e4m3 · e4m3 → bf16) with per-tensor scales and with per-row scales vs
  ``torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=bfloat16)`` (torch's scales: () per
  tensor, (m, 1) / (1, n) per row, views of ours); ok = rel err vs torch < 1e-2.  Shapes
  4096³, 8192³, m ∈ {16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096)}.  TFLOP/s.
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
import statistics
import time

from . import harness as H

SQUARES = (2048, 4096, 6144, 8192)
LLM_M = (1, 16, 128, 4096, 16384)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096))
DTYPES = ("bfloat16", "float16")
#: seconds of timed device work per row (all columns together), warm-up excluded
ROW_BUDGET_S = 0.6
#: tolerated ‖ours − torch‖ / ‖torch‖ (both round the output to 8 / 11 mantissa bits)
TOL = 2e-2
#: ``--variants`` columns: (json key, header, forced ``tile=``; None = the mma.sync tile rule)
VARIANTS = (("w128", "wgmma128x128", "wgmma128x128"), ("w256", "wgmma128x256", "wgmma128x256"),
            ("c2", "wgmma128x256c2", "wgmma128x256c2"), ("mma", "mma.sync", None))


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


def rel_err_chunked(out, ref, rows: int = 0) -> float:
    """‖out − ref‖ / ‖ref‖ accumulated in float64 over row blocks of about 256 MB (a 16384 ×
    128256 output would need 50 GB as whole float64 copies); inf when out has NaN / inf."""
    torch = H._torch()
    m = out.shape[0]
    rows = rows or max(1, (2 ** 25) // max(1, out.shape[1]))
    num = den = 0.0
    for i in range(0, m, rows):
        o = out[i:i + rows].to(torch.float64)
        r = ref[i:i + rows].to(torch.float64)
        if not bool(torch.isfinite(o).all()):
            return float("inf")
        num += float(((o - r) ** 2).sum())
        den += float((r ** 2).sum())
        del o, r
    return math.sqrt(num) / math.sqrt(den) if den > 0 else math.sqrt(num)


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


# -- cases -----------------------------------------------------------------------------------
def _case(torch, dtype, m, n, k, nt, variants=False):
    from baracuda_dsl import GemmTuning, PlanPreference
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    tdt = getattr(torch, dtype)
    esz = torch.empty((), dtype=tdt).element_size()
    ns = n_sets_for(m * k * esz, n * k * esz, m * n * esz)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda", dtype=tdt)
        if nt:
            b = torch.randn((n, k), device="cuda", dtype=tdt).t()   # (k, n), k-major
        else:
            b = torch.randn((k, n), device="cuda", dtype=tdt)
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=tdt)))
    desc = GemmDescriptor(m, n, k, dtype)
    plan = GemmPlan.select(desc)
    args = [GemmArgs(a, b, c) for a, b, c in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c = sets[0]
    go = runner(torch, plan)
    go(args[0])
    ref = torch.matmul(a, b)
    err = rel_err_chunked(c, ref)
    del ref
    fns = [rotating(go, [(x,) for x in args]),
           rotating(lambda a, b, c: torch.mm(a, b, out=c), sets)]
    keys = []
    row = dict(case=f"{dtype} {'NT' if nt else 'NN'} m={m} n={n} k={k}", dtype=dtype,
               layout="NT" if nt else "NN", m=m, n=n, k=k,
               kernel=kernel_name(tmpl, knobs) + (f" split{plan.splits}"
                                                  if getattr(plan, "splits", 1) > 1 else ""),
               err=err, ok=err < TOL, sets=ns)
    if variants and plan.sku().arch.value == "sm90a":
        for key, _hdr, tile in VARIANTS:
            p2, e = H.safe(GemmPlan.select, desc,
                           PlanPreference(tuning=GemmTuning(tile=tile or _mma_tile(m, n))))
            if p2 is None:                      # not wired for this problem: "—"
                row[f"{key}_tflops"], row[f"{key}_err"] = None, e
                continue
            go2 = runner(torch, p2)
            _, e = H.safe(go2, args[0])
            e2 = float("inf") if e else rel_err_chunked(c, torch.matmul(a, b))
            row[f"{key}_err"] = e or e2         # a failing or wrong variant shows "nan"
            if e2 < TOL:
                fns.append(rotating(go2, [(x,) for x in args]))
                keys.append(key)
            else:
                row[f"{key}_tflops"] = float("nan")
    ts = interleaved(fns)
    fl = 2.0 * m * n * k
    row.update(host_us=ts[0].host_us, torch_host_us=ts[1].host_us)
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min,
               torch_ms_min=ts[1].min, rounds=ts[0].samples, batch=ts[0].batch,
               tflops=fl / ts[0].median / 1e9, torch_tflops=fl / ts[1].median / 1e9)
    for key, t in zip(keys, ts[2:]):
        row[f"{key}_tflops"] = fl / t.median / 1e9
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


def _line(r) -> str:
    s = (f"{r['case']}: {r['kernel']} {r['ms']:.4f} ms {r['tflops']:.1f} TFLOP/s (cuBLAS "
         f"{r['torch_tflops']:.1f}, x{r['torch_ms'] / r['ms']:.2f}) err {r['err']:.1e} "
         f"host {r.get('host_us', 0):.0f}/{r.get('torch_host_us', 0):.0f} us")
    extra = [f"{hdr} {H.fmt(r.get(key + '_tflops'), '.1f')}" for key, hdr, _ in VARIANTS
             if key + "_tflops" in r]
    return s + (" | " + ", ".join(extra) if extra else "")


def run(out_dir=None, quick: bool = False, log=print, variants: bool = False,
        dtypes=None, match=()) -> dict:
    """All rows (bf16 then f16; ``quick``: bf16 subset; ``match``: see :func:`wanted`), each
    under harness.safe."""
    torch = H._torch()
    t0 = time.perf_counter()
    dts = dtypes or (DTYPES[:1] if quick else DTYPES)
    warm_gpu(torch)
    rows = []
    for dt in dts:
        for m, n, k, nt in cases(quick):
            case = f"{dt} {'NT' if nt else 'NN'} m={m} n={n} k={k}"
            if not wanted(case, match):
                continue
            r, err = H.safe(_case, torch, dt, m, n, k, nt, variants)
            if err:
                r = dict(case=case, dtype=dt, error=err)
                log(f"gemm: {r['case']}: {err}")
            else:
                log(f"gemm: {_line(r)}")
            rows.append(r)
            torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, variants=variants, wall_s=time.perf_counter() - t0),
                       out_dir, "bench_gemm.json")


def markdown(res: dict) -> str:
    """One table row per case (dtype and shape in the first column)."""
    var = bool(res.get("variants"))
    hdr = ["case", "kernel", "ours ms", "TFLOP/s", "cuBLAS TFLOP/s", "vs cuBLAS",
           "host µs/call (ours / torch)"]
    if var:
        hdr += [h for _, h, _ in VARIANTS]
    hdr.append("check (rel err)")
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append([r["case"]] + ["—"] * (len(hdr) - 2) + [r["error"]])
            continue
        row = [r["case"], r["kernel"], H.fmt(r["ms"], ".4f"), H.fmt(r["tflops"], ".1f"),
               H.fmt(r["torch_tflops"], ".1f"), H.fmt(r["torch_ms"] / r["ms"]),
               f"{H.fmt(r.get('host_us'), '.0f')} / {H.fmt(r.get('torch_host_us'), '.0f')}"]
        if var:
            row += [H.fmt(r.get(key + "_tflops"), ".1f") for key, _, _ in VARIANTS]
        row.append(f"{'ok' if r['ok'] else 'FAIL'} ({r['err']:.1e})")
        out.append(row)
    return H.md_table(hdr, out) + "\n"


# ==================================================================== tf32, int8, fp8 (gemm_lowp)
KINDS = ("tf32", "int8", "fp8")
TF32_CASES = ((4096, 4096, 4096, False), (8192, 8192, 8192, False),
              (16, 4096, 4096, True), (4096, 4096, 4096, True))
INT8_CASES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096), (16384, 14336, 4096))
FP8_SQUARES = (4096, 8192)
FP8_M = (16, 128, 4096, 16384)
FP8_NK = ((4096, 4096), (14336, 4096))
TF32_TOL = 2e-3
FP8_TOL = 1e-2


def fp8_cases(quick: bool):
    """(m, n, k, per_row) in run order."""
    shapes = [(s, s, s) for s in (FP8_SQUARES[:1] if quick else FP8_SQUARES)]
    if not quick:
        shapes += [(m, n, k) for n, k in FP8_NK for m in FP8_M]
    return [(m, n, k, pr) for m, n, k in shapes for pr in (False, True)]


def _out_ok(fn) -> bool:
    """Whether ``fn`` (a torch call with ``out=``, a preallocated output) runs on this torch."""
    return H.safe(fn)[1] is None


def _timed(row, fns, flops, unit, extra=()):
    """Time ``fns`` (ours, torch, then one per name in ``extra``) interleaved into ``row``."""
    ts = interleaved(fns)
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min, torch_ms_min=ts[1].min,
               rounds=ts[0].samples, batch=ts[0].batch, unit=unit,
               rate=flops / ts[0].median / 1e9, torch_rate=flops / ts[1].median / 1e9)
    for key, t in zip(extra, ts[2:]):
        row.update({f"{key}_ms": t.median, f"{key}_rate": flops / t.median / 1e9})
    return row


# -- tf32 ------------------------------------------------------------------------------------
def _tf32(torch, m, n, k, nt):
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

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
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = torch.matmul(a, b)                         # strict f32
        plan.run(args[0])
        err = rel_err_chunked(c, ref)
        del ref
        torch.backends.cuda.matmul.allow_tf32 = True
        row = dict(case=f"tf32 {'NT' if nt else 'NN'} m={m} n={n} k={k}", kind="tf32", m=m,
                   n=n, k=k, kernel=kernel_name(tmpl, knobs), err=err, ok=err < TF32_TOL,
                   sets=ns)
        return _timed(row, [rotating(plan.run, [(x,) for x in args]),
                            rotating(lambda a, b, c: torch.mm(a, b, out=c), sets)],
                      2.0 * m * n * k, "TFLOP/s")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


# -- int8 ------------------------------------------------------------------------------------
def _int8(torch, m, n, k):
    from baracuda_dsl.ops.gemm.gemm_int import IntGemmArgs, IntGemmDescriptor, IntGemmPlan

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
    plan.run(args[0])
    ref = torch._int_mm(a, b)
    exact = bool(torch.equal(c, ref))
    err = rel_err_chunked(c.double(), ref.double()) if not exact else 0.0
    del ref
    row = dict(case=f"int8 NT m={m} n={n} k={k}", kind="int8", m=m, n=n, k=k,
               kernel=kernel_name(tmpl, knobs), err=err, ok=exact, sets=ns)
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
    kt, _ = H.safe(plan.kernel_for, args[0])
    kernel = kernel_name(*kt) if kt else plan.sku().template
    a, b, c, sa, sb, tsa, tsb, ct = sets[0]
    go = runner(torch, plan)                       # split-K plans need a workspace
    go(args[0])
    ref = torch._scaled_mm(a, b, tsa, tsb, out_dtype=torch.bfloat16)
    err = rel_err_chunked(c, ref)
    del ref
    if getattr(plan, "splits", 1) > 1:
        kernel += f" split{plan.splits}"
    row = dict(case=case, kind="fp8", m=m, n=n, k=k, per_row=per_row, kernel=kernel, err=err,
               ok=err < FP8_TOL, sets=ns)
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
    return (f"{r['case']}: {r['kernel']} {r['ms']:.4f} ms {r['rate']:.1f} {r['unit']} (torch "
            f"{r['torch_rate']:.1f}, x{r['torch_ms'] / r['ms']:.2f}"
            + (f"; fast-accum {r['torch_fast_rate']:.1f}" if "torch_fast_rate" in r else "")
            + f") err {r['err']:.1e}"
            f"{'' if r['ok'] else ' FAIL'}")


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
    """One table row per case (kind, shape and scale mode in the first column)."""
    out = []
    for r in res["rows"]:
        if r.get("error") or r.get("skipped"):
            msg = r.get("error") or f"skipped: {r['skipped']}"
            out.append([r["case"]] + ["—"] * 7 + [msg])
            continue
        out.append([r["case"], r["kernel"], H.fmt(r["ms"], ".4f"),
                    f"{H.fmt(r['rate'], '.1f')} {r['unit']}", H.fmt(r["torch_rate"], ".1f"),
                    H.fmt(r["torch_ms"] / r["ms"]), H.fmt(r.get("torch_fast_rate"), ".1f"),
                    "exact" if r["kind"] == "int8" and r["ok"] else H.fmt(r["err"], ".1e"),
                    "ok" if r["ok"] else "FAIL"])
    return H.md_table(("case", "kernel", "ours ms", "ours rate", "torch rate", "vs torch",
                       "torch fast-accum rate", "rel err", "check"), out) + "\n"


SECTIONS = (H.Section("gemm", "GEMM (bf16 / f16 vs cuBLAS)", run, markdown),
            H.Section("gemm_lowp", "GEMM: tf32, int8, fp8 (vs torch.matmul, _int_mm, _scaled_mm)",
                      run_lowp, markdown_lowp))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="bf16 7 rows and 4096³ of each low-precision kind (smoke test)")
    ap.add_argument("--variants", action="store_true",
                    help="also time each forced sm90a kernel (wgmma128x128 / 128x256 / "
                         "128x256c2 / mma.sync) in the same rounds (bf16 / f16 rows)")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated subset of " + ",".join(DTYPES + KINDS)
                         + " (default all)")
    ap.add_argument("--match", default="",
                    help="comma-separated substrings of case names to run (e.g. "
                         "'n=128256,m=16 ,per-row'; a trailing space ends a number); default all")
    ap.add_argument("--out", help="directory for bench_gemm.json and bench_gemm_lowp.json")
    a = ap.parse_args(argv)
    asked = tuple(a.dtypes.split(",")) if a.dtypes else None
    unknown = sorted(set(asked or ()) - set(DTYPES + KINDS))
    if unknown:
        ap.error(f"unknown dtype(s) {','.join(unknown)}; choose from {','.join(DTYPES + KINDS)}")
    dts = tuple(d for d in asked if d in DTYPES) if asked else None
    kinds = tuple(d for d in asked if d in KINDS) if asked else KINDS
    match = tuple(x for x in a.match.split(",") if x)
    H.check_cuda()
    if dts is None or dts:
        print(markdown(run(a.out, a.quick, variants=a.variants, dtypes=dts, match=match)))
    if kinds:
        print(markdown_lowp(run_lowp(a.out, a.quick, kinds=kinds, match=match)))


if __name__ == "__main__":
    main()
