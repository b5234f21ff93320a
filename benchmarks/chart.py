"""One chart of every benchmarked family next to torch, from the benchmarks' JSON results.

    python3 -m benchmarks.chart DIR_OR_FILE... --out chart.png [--markdown]

(from the repo root; no GPU, no torch).  Each argument is a results file (``bench.json`` from
``run_all``, or ``bench_<section>.json`` from one family module) or a directory holding such
files (``bench.json`` first, then ``bench_*.json`` in name order).  A section met again later
replaces the earlier one (a note says so when the rows differ).  ``--out`` writes a PNG
(matplotlib, Agg backend; needs matplotlib, nothing else does); ``--markdown`` prints the
chart's data as a Markdown table (for RESULTS.md, with the command); with neither, the table is
printed.  Notes (what was skipped and why) go to stderr and under the table.

**Panels.**  Memory-bound ops: fraction of the copy ceiling (bytes moved / time / the
device-to-device copy bandwidth measured in the same run or section; 0-1 axis, values above 1
are drawn to the value).  Compute-bound ops (GEMM, attention, convolution, the large-matrix
linalg factorisations): TFLOP/s (int8 GEMM: TOPS), on a second panel.  Bars: ``ours``
(baracuda), ``torch`` (eager; for attention the better of torch SDPA's flash and cuDNN
backends), ``torch.compile`` where the row has it.

**Which rows (the rule, applied to every section the same way).**

1. A row counts when it has a time and a value: rows with an ``error``, without ``ms``, or
   whose own check failed (``ok`` false, ``status`` / ``check`` starting with ``FAIL``) are
   left out (counted in a note).
2. Rows are grouped by *op*: the row's ``op`` (or ``case``) label with the size tokens
   (``word=value``, e.g. ``m=4096``, ``S=8192``, ``n=2^20``, ``p=0.1``) removed; attention
   keeps its ``d=`` (head dim), attention rows are prefixed by their direction (FW / BW), and
   for conv / im2col the op is the label's last word (``fwd`` / ``dgrad`` / ``wgrad``,
   ``unfold`` / ``fold``; the layer name goes to the bar's label).  Sections that time every
   provider on its own row (softmax, attention, attention_decode, fft, linalg) are first
   joined per (direction, case, shape, dtype).
3. Of each op the *largest* case is shown: the most bytes moved (``bytes``, else
   ``gbs × ms``) for memory-bound sections, the most FLOPs (rate × time) for compute-bound
   ones, else the element count; ties (equal to 4 significant digits) go to the larger product
   of the removed size tokens (so the longest FFT of a fixed-volume batch), then to the first
   row.  Nothing is picked by name or by its result.

**Section → family / panel.**  ``norms`` normalization, ``elementwise``, ``softmax``,
``reductions`` reduction, ``scan``, ``unique`` sorting, ``histogram``, ``layout`` and ``pad``
shape, ``indexing``, ``segment``, ``random``, ``losses``, ``attention_decode`` (KV read),
``fft`` (in + out bytes; provider ``plan``), ``im2col``, ``pool``, ``image``: fraction of copy.
``gemm`` and ``gemm_lowp`` gemm, ``attention``, ``conv``, ``linalg`` (ops with a FLOP count:
cholesky, solve, qr): TFLOP/s.  Not charted (note): ``launch`` (host µs, not a throughput),
``sort`` (keys/s, no bytes model), losses' fused-linear-CE table (time and peak memory).  An
unknown section is charted by its fields (``tflops`` / ``rate`` → TFLOP/s, ``frac`` / ``gbs``
→ fraction of copy) under its own name.

**Fraction of copy.**  The row's ``frac`` (or ``frac_copy``, ``of_copy``); else ``gbs`` / the
section's copy ceiling (``copy_gbs`` / ``copy.gbs``; else the run's ``copy.gbs`` from a loaded
``bench.json``, noted).  torch's: ``torch_frac`` (``torch_frac_copy``), else ``torch_gbs`` /
ceiling, else ours × ``ms / torch_ms`` (same bytes).  ``torch.compile``: ``compile_frac``.

The data extraction (:func:`load`, :func:`extract`, :func:`markdown`) is pure Python; only
:func:`render` imports matplotlib.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from .harness import md_table            # harness imports torch only when it times

#: unit of the memory-bound panel
FRAC = "fraction of copy"
#: unit of the compute-bound panel
TFLOPS = "TFLOP/s"
MEM, FLOPS, SKIP = "mem", "flops", "skip"

_SHORT = {"bfloat16": "bf16", "float32": "f32", "float16": "f16", "float64": "f64",
          "int32": "i32", "int64": "i64", "int8": "i8", "complex64": "c64"}
#: keys of run_all's bench.json that are not results sections
_META = ("date", "device", "quick", "argv", "copy", "copy_after", "wall_s")
_TOKEN = re.compile(r"(?<!\S)([A-Za-z_]+)=(\S+)")


class Spec(NamedTuple):
    """How one section of the results is charted: its ``family``, ``kind`` (``"mem"``,
    ``"flops"`` or ``"skip"``), for sections with one row per provider the provider names of
    ours / torch / torch.compile (``providers``; torch: the best of several), the size tokens
    kept in the op name (``keep``), whether the op is the label's last word (``last_word``), and
    the ``note`` printed for a skipped section."""

    family: str
    kind: str
    providers: Optional[Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]] = None
    keep: Tuple[str, ...] = ()
    last_word: bool = False
    note: str = ""


#: every section key of run_all / the family modules this chart knows
SPECS: Dict[str, Spec] = {
    "norms": Spec("normalization", MEM),
    "elementwise": Spec("elementwise", MEM),
    "softmax": Spec("softmax", MEM, (("ours",), ("torch",), ("torch.compile",))),
    "reductions": Spec("reduction", MEM),
    "scan": Spec("scan", MEM),
    "sort": Spec("sorting", SKIP, note="keys/s only (no bytes model)"),
    "unique": Spec("sorting", MEM),
    "histogram": Spec("histogram", MEM),
    "layout": Spec("shape", MEM),
    "pad": Spec("shape", MEM),
    "indexing": Spec("indexing", MEM),
    "segment": Spec("segment", MEM),
    "random": Spec("random", MEM),
    "losses": Spec("losses", MEM),
    "attention_decode": Spec("attention_decode", MEM,
                             (("ours",), ("torch sdpa flash", "torch sdpa cudnn"), ())),
    "fft": Spec("fft", MEM, (("plan",), ("torch",), ())),
    "im2col": Spec("im2col", MEM, last_word=True),
    "pool": Spec("pool", MEM),
    "image": Spec("image", MEM),
    "gemm": Spec("gemm", FLOPS),
    "gemm_lowp": Spec("gemm", FLOPS),
    "attention": Spec("attention", FLOPS, (("ours",), ("torch flash", "torch cudnn"), ()),
                      keep=("d",)),
    "conv": Spec("conv", FLOPS, last_word=True),
    "linalg": Spec("linalg", FLOPS, (("ours",), ("torch",), ())),
    "launch": Spec("launch", SKIP, note="host µs per launch, not a throughput"),
}


class Series(NamedTuple):
    """One bar group of the chart: ``family``, ``label`` (op — size dtype), ``unit``
    (:data:`FRAC` or :data:`TFLOPS`), ``ours``, ``torch`` and ``compile`` (torch.compile; None
    where not measured), the results ``section`` and the ``source`` file."""

    family: str
    label: str
    unit: str
    ours: float
    torch: Optional[float]
    compile: Optional[float]
    section: str
    source: str


class Source(NamedTuple):
    """One loaded results file: its ``name`` (as given), parsed ``data`` and ``date`` (the
    file's modification date, used when the JSON has none)."""

    name: str
    data: object
    date: Optional[str] = None


class ChartData(NamedTuple):
    """What :func:`extract` returns: the ``series`` in chart order, the ``notes`` (skipped
    sections / rows), and ``meta`` (``gpu``, ``date``, ``copy_gbs`` (the run's ceiling),
    ``section_copy`` (min, max of the sections' own ceilings), ``sources``)."""

    series: List[Series]
    notes: List[str]
    meta: dict


# -- loading -----------------------------------------------------------------------------------

def expand(paths: Sequence[str]) -> List[str]:
    """Files of ``paths``: a directory gives its ``bench.json`` then ``bench_*.json`` (sorted);
    a file is kept as is."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            top = os.path.join(p, "bench.json")
            out += [top] if os.path.isfile(top) else []
            out += sorted(glob.glob(os.path.join(p, "bench_*.json")))
        else:
            out.append(p)
    return out


def load(paths: Sequence[str]) -> Tuple[List[Source], List[str]]:
    """(:class:`Source` of each readable JSON file of :func:`expand` (``paths``), notes on the
    unreadable ones)."""
    srcs, notes = [], []
    for f in expand(paths):
        try:
            with open(f) as fh:
                data = json.load(fh)
            day = datetime.date.fromtimestamp(os.path.getmtime(f)).isoformat()
        except (OSError, ValueError) as e:
            notes.append(f"{f}: not read ({type(e).__name__}: {e})")
            continue
        srcs.append(Source(f, data, day))
    return srcs, notes


def _sections_of(src: Source) -> List[Tuple[str, object]]:
    """(section key, result) pairs of one file: a ``bench_<key>.json`` (a dict with ``rows``)
    is one section, run_all's ``bench.json`` one per non-meta key."""
    d = src.data
    if isinstance(d, dict) and "rows" in d:
        base = os.path.basename(src.name)
        m = re.fullmatch(r"bench_(.+)\.json", base)
        return [(m.group(1) if m else os.path.splitext(base)[0], d)]
    if isinstance(d, list):
        base = os.path.basename(src.name)
        m = re.fullmatch(r"bench_(.+)\.json", base)
        return [(m.group(1) if m else os.path.splitext(base)[0], d)]
    if not isinstance(d, dict):
        return []
    return [(k, v) for k, v in d.items() if k not in _META]


# -- values ------------------------------------------------------------------------------------

def _num(x) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _copy_of(res) -> Optional[float]:
    if not isinstance(res, dict):
        return None
    c = _num(res.get("copy_gbs"))
    if c is None and isinstance(res.get("copy"), dict):
        c = _num(res["copy"].get("gbs"))
    return c


def _failed(r: dict) -> bool:
    if r.get("ok") is False:
        return True
    return any(str(r.get(k, "")).startswith("FAIL") for k in ("status", "check"))


def _frac(r: dict, copy: Optional[float]) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """(ours, torch, torch.compile) as fractions of the copy ceiling ``copy``."""
    ours = next((_num(r.get(k)) for k in ("frac", "frac_copy", "of_copy")
                 if _num(r.get(k)) is not None), None)
    if ours is None and copy and _num(r.get("gbs")) is not None:
        ours = r["gbs"] / copy
    tor = next((_num(r.get(k)) for k in ("torch_frac", "torch_frac_copy")
                if _num(r.get(k)) is not None), None)
    if tor is None and copy and _num(r.get("torch_gbs")) is not None:
        tor = r["torch_gbs"] / copy
    ms, tms = _num(r.get("ms")), _num(r.get("torch_ms"))
    if tor is None and ours is not None and ms and tms:
        tor = ours * ms / tms
    return ours, tor, _num(r.get("compile_frac"))


def _rate(r: dict) -> Tuple[Optional[float], Optional[float]]:
    """(ours, torch) TFLOP/s (``tflops``, ``rate``, ``gflops`` / 1000)."""
    for a, b, scale in (("tflops", "torch_tflops", 1.0), ("rate", "torch_rate", 1.0),
                        ("gflops", "torch_gflops", 1e-3)):
        if _num(r.get(a)) is not None:
            t = _num(r.get(b))
            return r[a] * scale, None if t is None else t * scale
    return None, None


def _parse_num(s: str) -> Optional[float]:
    m = re.fullmatch(r"(\d+)\^(\d+)", s)
    if m:
        return float(int(m.group(1)) ** int(m.group(2)))
    m = re.match(r"[\d.]+", s)
    try:
        return float(m.group(0)) if m else None
    except ValueError:
        return None


def _shape_elems(shape) -> Optional[float]:
    if not isinstance(shape, str):
        return None
    dims = [int(x) for x in re.findall(r"\d+", shape.split("[")[0].split(" ")[0])]
    return float(math.prod(dims)) if dims else None


def _size(r: dict, kind: str) -> float:
    """The problem size a row is ranked by (bytes, FLOPs or elements)."""
    ms = _num(r.get("ms"))
    if kind == MEM:
        if _num(r.get("bytes")):
            return float(r["bytes"])
        if ms and _num(r.get("gbs")):
            return r["gbs"] * ms * 1e6
    else:
        if all(_num(r.get(k)) for k in ("m", "n", "k")):
            return 2.0 * r["m"] * r["n"] * r["k"]
        rate, _ = _rate(r)
        if ms and rate:
            return rate * ms * 1e9
    return _shape_elems(r.get("shape")) or _num(r.get("n")) or 0.0


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits - 1}e}") if x else 0.0


def _op_and_detail(label: str, spec: Spec) -> Tuple[str, str, float]:
    """(op name, the removed size text, product of the removed numbers) of a row label."""
    removed, prod = [], 1.0
    if spec.last_word and " " in label.strip():
        head, op = label.strip().rsplit(" ", 1)
        return op, head, 1.0

    def cut(m):
        nonlocal prod
        if m.group(1) in spec.keep:
            return m.group(0)
        removed.append(m.group(0))
        v = _parse_num(m.group(2))
        prod *= v if v else 1.0
        return ""

    op = " ".join(_TOKEN.sub(cut, label).split())
    return op or label, " ".join(removed), prod


# -- extraction --------------------------------------------------------------------------------

def _rows_of(res) -> Optional[list]:
    if isinstance(res, list):
        return res
    if isinstance(res, dict) and isinstance(res.get("rows"), list):
        return res["rows"]
    return None


def _guess(key: str, rows: list) -> Optional[Spec]:
    fields = set().union(*(r.keys() for r in rows if isinstance(r, dict)))
    if fields & {"tflops", "rate"}:
        return Spec(key, FLOPS)
    if fields & {"frac", "frac_copy", "of_copy", "gbs"}:
        return Spec(key, MEM)
    return None


def _joined(rows: list, spec: Spec) -> List[Tuple[dict, Optional[list], Optional[dict]]]:
    """Provider-per-row sections: (ours row, the torch rows with a time, torch.compile row)
    per (direction, case, shape, dtype); row-per-case sections: (row, None, None)."""
    if spec.providers is None:
        return [(r, None, None) for r in rows]
    ours_n, torch_n, comp_n = spec.providers
    groups: Dict[tuple, Dict[str, dict]] = {}
    for r in rows:
        key = (r.get("dir"), r.get("case"), r.get("shape"), r.get("dtype"))
        groups.setdefault(key, {})[r.get("provider")] = r
    out = []
    for g in groups.values():
        ours = next((g[p] for p in ours_n if p in g), None)
        if ours is None:
            continue
        def good(p):
            x = g.get(p)
            return x if x and not x.get("error") and _num(x.get("ms")) else None
        tor = [good(p) for p in torch_n if good(p)]
        comp = next((good(p) for p in comp_n if good(p)), None)
        out.append((ours, tor, comp))
    return out


def _best(vals) -> Optional[float]:
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


def section_series(key: str, res, source: str, run_copy: Optional[float] = None,
                   notes: Optional[list] = None) -> List[Series]:
    """The chart's :class:`Series` of one results section (``key`` as in bench.json, ``res``
    its result dict or row list) under the rule of the module docstring; ``run_copy`` is the
    run's copy ceiling for rows that only have GB/s; reasons for what is left out are appended
    to ``notes``."""
    notes = [] if notes is None else notes
    rows = _rows_of(res)
    if rows is None:
        return []
    rows = [r for r in rows if isinstance(r, dict)]
    spec = SPECS.get(key) or _guess(key, rows)
    if spec is None:
        notes.append(f"{key} ({source}): no throughput fields — not charted")
        return []
    if spec.kind == SKIP:
        notes.append(f"{key} ({source}): {spec.note} — not charted")
        return []
    if isinstance(res, dict) and res.get("error") and not rows:
        notes.append(f"{key} ({source}): section failed ({res['error']}) — not charted")
        return []
    if key not in SPECS:
        notes.append(f"{key} ({source}): unknown section, charted by its fields as "
                     f"{'TFLOP/s' if spec.kind == FLOPS else 'fraction of copy'}")
    if key == "losses" and isinstance(res, dict) and res.get("lce"):
        notes.append(f"losses ({source}): the fused linear CE table (time, peak memory) is not "
                     "charted")
    copy = _copy_of(res)
    if copy is None and spec.kind == MEM and run_copy:
        copy = run_copy
        if any(not any(_num(r.get(k)) is not None for k in ("frac", "frac_copy", "of_copy"))
               for r in rows if _num(r.get("ms")) is not None):
            notes.append(f"{key} ({source}): no copy ceiling of its own; GB/s divided by the "
                         f"run's {run_copy:.0f} GB/s")
    best: Dict[str, tuple] = {}
    dropped = 0
    for i, (r, tr, cr) in enumerate(_joined(rows, spec)):
        if r.get("error") or _num(r.get("ms")) is None or _failed(r):
            dropped += 1
            continue
        if spec.kind == MEM:
            ours, tor, comp = _frac(r, copy)
            if tr is not None:
                tor = _best([_frac(x, copy)[0] for x in tr])
            if cr is not None:
                comp = _frac(cr, copy)[0]
        else:
            ours, tor = _rate(r)
            comp = None
            if tr is not None:
                tor = _best([_rate(x)[0] for x in tr])
        if ours is None:
            dropped += 1
            continue
        label = str(r.get("op") or r.get("case") or "?")
        op, removed, prod = _op_and_detail(label, spec)
        if r.get("dir"):
            op = f"{r['dir']} {op}"
        rank = (_sig(_size(r, spec.kind)), prod, -i)
        if op not in best or rank > best[op][0]:
            best[op] = (rank, r, ours, tor, comp, removed)
    if dropped:
        notes.append(f"{key} ({source}): {dropped} row(s) left out (error, no time, no "
                     "charted value, or a failed check)")
    out = []
    for op, (_, r, ours, tor, comp, removed) in best.items():
        dt = r.get("dtype") or r.get("kind")
        parts = [removed, str(r["shape"]) if r.get("shape") else "",
                 _SHORT.get(dt, dt) if dt and dt not in op and dt not in removed else ""]
        detail = " ".join(p for p in parts if p)
        unit = FRAC if spec.kind == MEM else TFLOPS
        if str(r.get("unit", "")).upper() == "TOPS":
            op += " (TOPS)"
        out.append(Series(spec.family, f"{op} — {detail}" if detail else op, unit, ours, tor,
                          comp, key, source))
    return out


def extract(sources: Sequence[Source]) -> ChartData:
    """The chart's data of loaded results files (pure: no I/O, no matplotlib).  Sections are
    taken in file order, a later file's section replacing an earlier one; series come in the
    order of :data:`SPECS` (unknown sections last), ops in their first-row order."""
    notes: List[str] = []
    sections: Dict[str, Tuple[object, str]] = {}
    meta = dict(gpu=None, date=None, copy_gbs=None, sources=[s.name for s in sources])
    dates = []
    for s in sources:
        d = s.data
        if isinstance(d, dict):
            dev = d.get("device")
            if isinstance(dev, dict) and dev.get("gpu") and not meta["gpu"]:
                meta["gpu"] = dev["gpu"]
            if "rows" not in d and isinstance(d.get("copy"), dict) and meta["copy_gbs"] is None:
                meta["copy_gbs"] = _num(d["copy"].get("gbs"))
            dates.append(d.get("date") or s.date)
        for key, res in _sections_of(s):
            if key in sections and _rows_of(sections[key][0]) != _rows_of(res):
                notes.append(f"{key}: {s.name} replaces {sections[key][1]}")
            sections[key] = (res, s.name)
    dates = sorted({x for x in dates if x})
    meta["date"] = dates[-1] if len(dates) == 1 else (
        f"{dates[0]} … {dates[-1]}" if dates else None)
    series: List[Series] = []
    order = list(SPECS) + [k for k in sections if k not in SPECS]
    for key in order:
        if key in sections:
            res, src = sections[key]
            series += section_series(key, res, src, meta["copy_gbs"], notes)
    copies = [c for c in (_copy_of(sections[k][0]) for k in sections) if c]
    meta["section_copy"] = (min(copies), max(copies)) if copies else None
    if not meta["gpu"]:
        notes.append("no GPU name in the files")
    if not series:
        notes.append("nothing to chart")
    return ChartData(series, notes, meta)


# -- output ------------------------------------------------------------------------------------

def _f(x, unit) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}" if unit == FRAC else f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def title(data: ChartData, wrap: int = 0) -> str:
    """The figure's title: GPU, date, copy ceiling (the run's and the sections' own) and the
    source files (grouped by directory; wrapped at ``wrap`` characters when ``wrap``)."""
    m = data.meta
    parts = [m.get("gpu") or "GPU unknown", m.get("date") or "date unknown"]
    cp = m.get("copy_gbs")
    sc = m.get("section_copy")
    ceil = f"copy ceiling {cp:.0f} GB/s" if cp else "copy ceiling: each section's own"
    if sc:
        ceil += (f" (sections' own: {sc[0]:.0f} GB/s)" if round(sc[0]) == round(sc[1]) else
                 f" (sections' own: {sc[0]:.0f}–{sc[1]:.0f} GB/s)")
    parts.append(ceil)
    by_dir: Dict[str, List[str]] = {}
    for f in m.get("sources", []):
        d, b = os.path.split(f)
        by_dir.setdefault(d, []).append(b)
    srcs = "; ".join((f"{d}/" if d else "") + (names[0] if len(names) == 1 else
                                                "{" + ", ".join(names) + "}")
                     for d, names in by_dir.items())
    lines = ["baracuda-dsl vs torch — " + " · ".join(parts), "sources: " + srcs]
    if wrap:
        import textwrap

        lines = [textwrap.fill(x, wrap, subsequent_indent="    ") for x in lines]
    return "\n".join(lines)


def markdown(data: ChartData, command: Optional[str] = None) -> str:
    """The chart's data as a Markdown table (family, op, unit, ours, torch, torch.compile,
    ours / torch, section), headed by :func:`title` and the command, notes below."""
    rows = []
    for s in data.series:
        ratio = f"{s.ours / s.torch:.2f}" if s.torch else "—"
        rows.append((s.family, s.label, s.unit, _f(s.ours, s.unit), _f(s.torch, s.unit),
                     _f(s.compile, s.unit), ratio, s.section))
    head = title(data).replace("\n", "  \n")
    out = [head, ""]
    if command:
        out += [f"Command: `{command}`", ""]
    out.append(md_table(("family", "op — case", "unit", "ours", "torch", "torch.compile",
                          "ours / torch", "section"), rows))
    if data.notes:
        out += ["", "Notes: " + "; ".join(data.notes) + "."]
    return "\n".join(out) + "\n"


#: bar colours: ours, torch, torch.compile
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c")
#: inches per row of a panel (a bar group or a family heading)
SLOT = 0.24


def _items(ss: List[Series]) -> list:
    """The rows of one panel: a family name (str) before each family's series."""
    out: list = []
    for i, s in enumerate(ss):
        if i == 0 or s.family != ss[i - 1].family:
            out.append(s.family)
        out.append(s)
    return out


def render(data: ChartData, path: str) -> None:
    """Write the chart of ``data`` to ``path`` (PNG): one horizontal bar group per series under
    a heading per family; memory-bound series (fraction of copy) in the left panel, TFLOP/s in
    the right one (same bar thickness), the legend and the notes under it; needs matplotlib
    (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(u, _items([s for s in data.series if s.unit == u])) for u in (FRAC, TFLOPS)]
    panels = [(u, it) for u, it in panels if it]
    if not panels:
        raise ValueError("nothing to chart")
    import textwrap

    head = 1.3                                   # inches for the title
    rows = max(len(it) for _, it in panels)
    wrap = 95 if len(panels) > 1 else 160
    note_lines = sum(len(textwrap.wrap("• " + n, wrap)) for n in data.notes)
    # the last column holds its panel, the legend and the notes
    below = len(panels[-1][1]) * SLOT + 1.6 + 0.12 * (note_lines + 1)
    h = max(rows * SLOT + 1.0, below, 6.0) + head
    fig = plt.figure(figsize=(8.5 * len(panels), h))
    top = 1 - head / h
    unit_h = SLOT / h
    handles = None
    for j, (unit, items) in enumerate(panels):
        left = 0.36 / len(panels) + j / len(panels)
        width = 0.60 / len(panels)
        ph = unit_h * len(items)
        ax = fig.add_axes((left, top - ph, width, ph))
        hs = _panel(ax, unit, items)
        handles = hs if handles is None or len(hs) > len(handles) else handles
    # legend and notes in the free space of the last panel's column
    used = unit_h * len(panels[-1][1]) + 0.9 / h
    x0 = (len(panels) - 1) / len(panels) + 0.02
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(x0, top - used),
               fontsize=8, frameon=False, ncol=3)
    if data.notes:
        txt = "\n".join(textwrap.fill("• " + n, wrap, subsequent_indent="   ")
                         for n in data.notes)
        fig.text(x0, top - used - 0.45 / h, "Not charted / notes:\n" + txt, va="top",
                 ha="left", fontsize=6.5, color="0.3")
    fig.text(0.01, 1 - 0.12 / h, title(data, wrap=100 * len(panels)), va="top", ha="left",
             fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _clip(label: str, n: int = 44) -> str:
    return label if len(label) <= n else label[:n - 1] + "…"


def _panel(ax, unit: str, items: list):
    """Draw one panel's bars; returns the legend handles."""
    n = len(items)
    ss = [(y, s) for y, s in enumerate(items) if isinstance(s, Series)]
    width = 0.28
    has_comp = any(s.compile is not None for _, s in ss)
    names = [("ours (baracuda)", "ours"), ("torch", "torch")]
    if has_comp:
        names.append(("torch.compile", "compile"))
    offs = [-width, 0.0, width] if has_comp else [-width / 2, width / 2]
    vmax = max([v for _, s in ss for v in (s.ours, s.torch, s.compile) if v is not None]
               or [1.0])
    handles = []
    for (lab, attr), off, col in zip(names, offs, COLORS):
        pts = [(y + off, getattr(s, attr)) for y, s in ss if getattr(s, attr) is not None]
        handles.append(ax.barh([p[0] for p in pts], [p[1] for p in pts], height=width,
                               color=col, label=lab))
        if attr == "ours":
            for y, v in pts:
                ax.text(v, y, " " + _f(v, unit), va="center", fontsize=6)
    ax.set_yticks(range(n))
    ax.set_yticklabels([_clip(s.label) if isinstance(s, Series) else s for s in items],
                       fontsize=7)
    for t, s in zip(ax.get_yticklabels(), items):
        if not isinstance(s, Series):
            t.set_fontweight("bold")
            t.set_fontsize(8)
    for y, s in enumerate(items):
        if not isinstance(s, Series) and y:
            ax.axhline(y - 0.5, color="0.6", lw=0.6)
    ax.set_ylim(n - 0.5, -0.5)
    if unit == FRAC:
        ax.set_xlim(0, max(1.05, vmax * 1.08))
        ax.axvline(1.0, color="k", lw=0.8, ls="--")
        ax.set_xlabel("fraction of the copy ceiling (model bytes / time / copy bandwidth)",
                      fontsize=8)
        ax.set_title("memory-bound: fraction of the copy ceiling", fontsize=9)
    else:
        ax.set_xlim(0, vmax * 1.12)
        ax.set_xlabel("TFLOP/s (int8: TOPS)", fontsize=8)
        ax.set_title("compute-bound: TFLOP/s", fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", lw=0.3, color="0.85")
    ax.set_axisbelow(True)
    return handles


def main(argv=None) -> int:
    """Command line: ``python3 -m benchmarks.chart DIR_OR_FILE... [--out PNG] [--markdown]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="bench.json / bench_*.json files or directories")
    ap.add_argument("--out", help="PNG to write (needs matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="print the chart's data table")
    a = ap.parse_args(argv)
    srcs, notes = load(a.paths)
    data = extract(srcs)
    data.notes[:0] = notes
    cmd = "python3 -m benchmarks.chart " + " ".join(a.paths) + (f" --out {a.out}" if a.out
                                                                  else "")
    if a.markdown or not a.out:
        print(markdown(data, cmd))
    else:
        for n in data.notes:
            print("note:", n, file=sys.stderr)
    if a.out:
        if not data.series:
            print("chart: nothing to chart, no PNG written", file=sys.stderr)
            return 1
        try:
            render(data, a.out)
        except ImportError as e:
            print(f"chart: matplotlib is needed for --out ({e}); use --markdown",
                  file=sys.stderr)
            return 2
        print(f"wrote {a.out} ({len(data.series)} bar groups)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
