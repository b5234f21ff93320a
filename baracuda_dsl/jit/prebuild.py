"""Prebuilding the cubin cache: every SKU of the chosen families for each arch, compiled in
parallel worker processes (one pool per arch), with a progress bar and a summary table.
Works on a machine without a GPU."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..vocabulary import ArchSku
from .cache import KernelCache
from .template import all_templates, knob_key


@dataclass
class Tally:
    """Per (family, arch) counts."""

    compiled: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0
    errors: List[str] = field(default_factory=list)


def plan_jobs(families: Optional[Sequence[str]], arches: Sequence[ArchSku], cache: KernelCache):
    """(template, knobs, arch, already_cached) for every SKU of the selection."""
    out = []
    for t in all_templates(families):
        for a in arches:
            for knobs in t.skus(a.value):
                out.append((t, knobs, a, cache.get(t, knobs, a.value) is not None))
    return out


def prebuild(families: Optional[Sequence[str]], arches: Sequence[ArchSku], jobs: int,
             cache: KernelCache, console=None) -> Dict[Tuple[str, str], Tally]:
    """Compile every missing SKU; returns the (family, arch) → Tally table."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from . import compiler

    console = console or Console(stderr=True)
    tally: Dict[Tuple[str, str], Tally] = defaultdict(Tally)
    work = plan_jobs(families, arches, cache)
    todo = []
    for t, knobs, a, hit in work:
        if hit:
            tally[(t.family, a.value)].cached += 1
        else:
            todo.append((t, knobs, a))
    t_start = {}
    futures = []
    for t, knobs, a in todo:
        fut = compiler.submit(t.name, knobs, a, jobs)
        t_start[id(fut)] = time.perf_counter()
        futures.append((fut, t, knobs, a))
    columns = [TextColumn("[bold]prebuild"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.description}"), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=False,
                  disable=not console.is_terminal) as prog:
        task = prog.add_task("", total=len(futures))
        for i, (fut, t, knobs, a) in enumerate(futures):
            key = (t.family, a.value)
            try:
                cubin, meta = fut.result()
                cache.put(t, knobs, a.value, cubin, meta)
                tally[key].compiled += 1
                tally[key].seconds += float(meta.get("compile_seconds", 0.0))
            except Exception as e:  # report every failure, keep going
                tally[key].failed += 1
                tally[key].errors.append(f"{t.name}({knob_key(knobs)}) @{a.value}: "
                                         f"{str(e).strip().splitlines()[0][:300]}")
            prog.update(task, advance=1, description=f"{a.value} {t.name}")
            if not console.is_terminal and (i + 1) % 25 == 0:
                console.print(f"prebuild: {i + 1}/{len(futures)} SKUs")
    compiler.shutdown()
    return dict(tally)
