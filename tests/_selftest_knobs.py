"""Knobs of the test-only ``selftest`` templates (a module of its own: importing it registers
nothing)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class SelftestKnobs:
    """``dtype`` f32 / f16 of ``y = s * x``; ``threads`` per block."""

    dtype: str
    threads: int
