"""The gemm family's tuning record: choices a caller forces instead of the plans' heuristics.

    pref = PlanPreference(tuning=GemmTuning(tile="wgmma128x128", splits=4))
    plan = GemmPlan.select(GemmDescriptor(64, 4096, 4096, "bf16"), pref)

Every gemm plan (``GemmPlan``, ``BatchedGemmPlan``, ``GroupedGemmPlan``, ``Fp8GemmPlan``,
``IntGemmPlan``) reads it with ``pref.tuning_for(GemmTuning)``; which tiles and split counts a
plan accepts is in its module docstring (a value it cannot honour raises UnsupportedError /
InvalidProblemError at select time, never silently changes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from ...errors import InvalidProblemError
from ...vocabulary import PlanPreference


@dataclass(frozen=True)
class GemmTuning:
    """``tile``: a tile name the plan forces (None = its heuristic; GemmPlan: "128x128",
    "64x64", "16x32", "simt", on sm90a "wgmma128x64" / "wgmma128x128" / "wgmma128x256" /
    "wgmma128x256c2"; the fp8 / int plans: theirs).  ``splits``: the split-K count (None = the
    heuristic, 1 = no split)."""

    tile: Optional[str] = None
    splits: Optional[int] = None

    def __post_init__(self):
        if self.tile is not None and not isinstance(self.tile, str):
            raise InvalidProblemError(f"GemmTuning: tile must be a tile name or None, got "
                                      f"{self.tile!r}")
        s = self.splits
        if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s < 1):
            raise InvalidProblemError(f"GemmTuning: splits must be an int >= 1, got {s!r}")


def with_gemm_tuning(pref: PlanPreference, tuning: GemmTuning) -> PlanPreference:
    """``pref`` with its GemmTuning record replaced by ``tuning`` (the other records kept)."""
    rest = tuple(t for t in pref.tuning if type(t) is not GemmTuning)
    return replace(pref, tuning=rest + (tuning,))
