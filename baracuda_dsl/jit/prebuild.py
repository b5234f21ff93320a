"""Prebuilding the cubin cache: every SKU of the chosen families for each arch, compiled in
parallel worker processes, with a progress bar (plain log lines when the output is not a
terminal) and a per (family, arch) tally.  Works on a machine without a GPU.

At most ``jobs`` compiles run at once over all arches.  Work is queued arch by arch; each arch has
its own worker pool (``CUTE_DSL_ARCH`` is fixed per process), freed as soon as that arch's SKUs are
done, so at most two pools are alive at a time.  SKUs already in the cache are skipped.

What gets built is a :class:`Selection`: the SKU set (``core`` by default, see :mod:`.tiers`, or
``all``), optional template and dtype filters, and a shard ``K/N`` so that N machines build
disjoint parts (round-robin over each arch's sorted SKU list, cached or not, so the parts do not
depend on what any cache holds) whose caches ``pack`` / ``unpack`` merge.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from ..vocabulary import ArchSku
from . import tiers
from .cache import KernelCache
from .template import KernelTemplate, Knobs, knob_key


@dataclass
class Tally:
    """Per (family, arch) counts: SKUs compiled now, found in the cache, failed; summed compile
    seconds (worker time, not wall time); one concise error line per failed SKU."""

    compiled: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0
    errors: List[str] = field(default_factory=list)


class Job(NamedTuple):
    """One SKU build: template, frozen knobs, arch, and whether the cache already holds it."""

    template: KernelTemplate
    knobs: Knobs
    arch: ArchSku
    cached: bool


@dataclass(frozen=True)
class Selection:
    """Which SKUs of the chosen templates to build: ``which`` set (``core`` / ``all``),
    ``dtypes`` (None: any; else only SKUs whose data dtypes are all in it; dtype-agnostic SKUs
    always pass), and shard ``index`` of ``count`` (1-based: shard 1/1 is everything)."""

    which: str = "core"
    dtypes: Optional[FrozenSet[str]] = None
    index: int = 1
    count: int = 1

    def __post_init__(self):
        if self.which not in tiers.SETS:
            raise ValueError(f"unknown SKU set {self.which!r}; known: {', '.join(tiers.SETS)}")
        if not (self.count >= 1 and 1 <= self.index <= self.count):
            raise ValueError(f"shard {self.index}/{self.count}: need 1 <= K <= N")
        if self.dtypes is not None:
            unknown = set(self.dtypes) - tiers.ALL_DTYPES
            if unknown:
                raise ValueError(f"unknown dtype(s) {', '.join(sorted(unknown))}; known: "
                                 f"{', '.join(sorted(tiers.ALL_DTYPES - {'any'}))}")

    def skus(self, t: KernelTemplate, arch: str) -> Tuple[Knobs, ...]:
        """The SKUs of ``t`` for ``arch`` in the set and the dtype filter (before sharding)."""
        ks = tiers.select(t, t.skus(arch), arch, self.which)
        if self.dtypes is not None:
            ks = tuple(k for k in ks if tiers.data_dtypes(t.thaw(k)) <= self.dtypes | {"any"})
        return ks


def plan_jobs(templates: Sequence[KernelTemplate], arches: Sequence[ArchSku],
              cache: KernelCache, selection: Selection = Selection()) -> List[Job]:
    """The selected SKUs of ``templates`` for every arch (arch-major order), flagged when cached;
    with a shard, every ``count``-th SKU of each arch's (template, SKU id)-sorted list."""
    out = []
    for a in arches:
        every = sorted(((t, k) for t in templates for k in selection.skus(t, a.value)),
                       key=lambda tk: (tk[0].name, tk[0].sku_id(tk[1])))
        for i, (t, knobs) in enumerate(every):
            if i % selection.count == selection.index - 1:
                out.append(Job(t, knobs, a, cache.get(t, knobs, a.value) is not None))
    return out


def error_line(t: KernelTemplate, e: BaseException, limit: int = 300) -> str:
    """First meaningful line of a compile failure, without the template/knob prefix that the
    compiler puts in front (the caller prints the SKU itself)."""
    text = str(e).strip() or type(e).__name__
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), text)
    line = re.sub(r"^" + re.escape(t.name) + r"\(\(.*?\)\)(?: for \w+)?: ", "", line)
    if type(e).__name__ != "CompileError" and not line.startswith(type(e).__name__):
        line = f"{type(e).__name__}: {line}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def prebuild(templates: Sequence[KernelTemplate], arches: Sequence[ArchSku], jobs: int,
             cache: KernelCache, console=None,
             selection: Selection = Selection()) -> Dict[Tuple[str, str], Tally]:
    """Compile every selected SKU that is not cached yet and store it; returns the
    (family, arch) → :class:`Tally` table.  Failures are recorded, never raised."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from . import compiler

    console = console or Console(stderr=True)
    jobs = max(int(jobs), 1)
    tally: Dict[Tuple[str, str], Tally] = defaultdict(Tally)
    pending = deque()
    left = defaultdict(int)  # arch -> SKUs not finished yet
    for j in plan_jobs(templates, arches, cache, selection):
        key = (j.template.family, j.arch.value)
        if j.cached:
            tally[key].cached += 1
        else:
            tally[key]  # noqa: B018  (the row shows up even if every build fails)
            pending.append(j)
            left[j.arch] += 1
    total = len(pending)
    columns = [TextColumn("[bold]prebuild"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.description}"), TimeElapsedColumn(), TextColumn("ETA"),
               TimeRemainingColumn()]
    tty = console.is_terminal
    t0 = time.perf_counter()
    last_log = t0
    inflight: Dict[cf.Future, Job] = {}
    done_n = 0
    try:
        with Progress(*columns, console=console, transient=False, disable=not tty) as prog:
            task = prog.add_task("", total=total)
            while pending or inflight:
                while pending and len(inflight) < jobs:
                    j = pending.popleft()
                    try:
                        inflight[compiler.submit(j.template, j.knobs, j.arch, jobs)] = j
                    except Exception as e:  # a broken pool refuses new work
                        f: cf.Future = cf.Future()
                        f.set_exception(e)
                        inflight[f] = j
                finished, _ = cf.wait(list(inflight), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    j = inflight.pop(fut)
                    key = (j.template.family, j.arch.value)
                    try:
                        cubin, meta = fut.result()
                        cache.put(j.template, j.knobs, j.arch.value, cubin, meta)
                        tally[key].compiled += 1
                        tally[key].seconds += float(meta.get("compile_seconds", 0.0))
                    except Exception as e:  # record every failure, keep going
                        tally[key].failed += 1
                        tally[key].errors.append(f"{j.template.name}({knob_key(j.knobs)}) "
                                                 f"@{j.arch.value}: {error_line(j.template, e)}")
                    done_n += 1
                    left[j.arch] -= 1
                    if left[j.arch] == 0:
                        compiler.shutdown(j.arch)  # free this arch's workers
                    prog.update(task, advance=1, description=f"{j.arch.value} {j.template.name}")
                    now = time.perf_counter()
                    if not tty and (now - last_log >= 15 or done_n == total
                                    or done_n % max(total // 10, 25) == 0):
                        last_log = now
                        el = now - t0
                        eta = el / done_n * (total - done_n)
                        console.print(f"prebuild: {done_n}/{total} SKUs, {j.arch.value}, "
                                      f"{el:.0f} s elapsed, ETA {eta:.0f} s", highlight=False)
    finally:
        compiler.shutdown(wait=False)
    return dict(tally)
