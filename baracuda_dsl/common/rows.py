"""The row engine: how row kernels (norms, softmax, cross-entropy, ...) lay a row over threads.

A row kernel reduces and rewrites ``M`` rows of ``N`` unit-stride elements.  ``tpr`` consecutive
threads own a row and a CTA holds ``rows`` rows (block = tpr·rows threads); every global access
moves ``vec`` elements (16 bytes, or 1 on the generic misaligned path).  Three modes:

- register bucket (``chunks > 0``): each thread keeps ``chunks`` vectors of its row in registers,
  so the row is read once; the SKU serves ``N <= capacity = chunks·tpr·vec·cluster``;
- thread-block cluster (sm90a, ``cluster > 1``): a row longer than one CTA's registers is split
  over ``cluster`` CTAs, one bucket-sized slice each (``half`` slices: half the largest bucket,
  smaller CTAs, two resident per SM); the slices' partials meet in distributed shared memory;
- loop (``chunks == 0``): any ``N``, the row is re-read (mostly from L2) for every pass.

:class:`RowGeometry` is that knob group (every row template's knobs type extends it);
:class:`RowEngine` is one kernel template's configuration — register buckets, caps per dtype,
elements per thread, the cluster slices it is built with — and produces the SKU geometries
(:meth:`RowEngine.space`), the launch geometry (:meth:`RowEngine.launch`) and the plan-side
choice for a row length (:meth:`RowEngine.choose`) under a :class:`RowPolicy` (a family's tuning:
cluster ladder, thresholds).  The SKU space never depends on the policy.  Pure Python: importable
without the DSL (the device halves are in :mod:`baracuda_dsl.blocks`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional, Tuple, Union

from ..errors import UnsupportedError
from ..jit.template import LaunchGeometry

WARP = 32
#: a CTA packs rows of short buckets up to this many threads
PACK_THREADS = 128
#: threads per row of the loop SKUs: vectorised (16-byte accesses) and generic (element-wise)
LOOP_TPR = 512
GENERIC_TPR = 256
#: bytes of one global access on the vector path
ACCESS_BYTES = 16

ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}

#: one rung of a cluster ladder: (CTAs per cluster, half-size slices?)
Rung = Tuple[int, bool]
Ladder = Tuple[Rung, ...]


def max_vec(dtype: str) -> int:
    """Elements of ``dtype`` in one 16-byte access."""
    return ACCESS_BYTES // ITEMSIZE[dtype]


@dataclass(frozen=True)
class ByDtype:
    """One integer per row dtype (f32, f16, bf16, f64): register caps, elements per thread."""

    f32: int
    f16: int
    bf16: int
    f64: int

    def __getitem__(self, dtype: str) -> int:
        return getattr(self, dtype)

    @classmethod
    def vectors(cls, n: int) -> "ByDtype":
        """``n`` 16-byte vectors of each dtype, in elements."""
        return cls(*(n * max_vec(d) for d in ("f32", "f16", "bf16", "f64")))


@dataclass(frozen=True)
class RowGeometry:
    """The row-geometry knobs shared by every row template (see the module docstring):
    ``vec`` elements per access, ``tpr`` threads per row, ``rows`` rows per CTA, ``chunks``
    register vectors per thread (0 = loop mode), ``cluster`` CTAs per row (sm90a only if > 1)."""

    vec: int
    tpr: int
    rows: int
    chunks: int
    cluster: int

    @classmethod
    def of(cls, geo: "RowGeometry", **fields):
        """A ``cls`` (a knobs type extending RowGeometry) with ``geo``'s geometry and ``fields``."""
        return cls(vec=geo.vec, tpr=geo.tpr, rows=geo.rows, chunks=geo.chunks,
                   cluster=geo.cluster, **fields)

    @property
    def threads(self) -> int:
        """Block size: tpr·rows."""
        return self.tpr * self.rows

    @property
    def capacity(self) -> int:
        """Longest row a register-mode SKU serves (chunks·tpr·vec·cluster; 0 in loop mode)."""
        return self.chunks * self.tpr * self.vec * self.cluster

    def blocks(self, m: int) -> int:
        """CTAs (grid x) for ``m`` rows: one per ``rows`` rows, times the cluster size."""
        return (m + self.rows - 1) // self.rows * self.cluster

    def arch_ok(self, arch: str) -> bool:
        """Cluster geometries exist for sm90a only."""
        return self.cluster == 1 or arch == "sm90a"


@dataclass(frozen=True)
class WideRows:
    """Alternative buckets for two-byte dtypes: half the threads per row and twice the vectors
    per thread (``buckets``), and clusters of such slices of the largest bucket (``clusters``:
    CTAs per cluster)."""

    dtypes: Tuple[str, ...]
    buckets: Tuple[int, ...]
    clusters: Tuple[int, ...]


@dataclass(frozen=True)
class RowPolicy:
    """How a plan picks a row geometry (a family's tuning; never changes the SKU space).

    ``ladder``         cluster rungs (CTAs, half slices) in order of preference, sm90a only;
    ``cluster_above``  rows longer than this try the ladder before the single-CTA buckets
                       (None: only rows beyond one CTA's registers take the ladder);
    ``loop_above``     rows longer than this (and beyond one CTA) skip the ladder for the loop;
    ``wide_above``     two-byte rows longer than this take the engine's wide buckets / clusters
                       when one serves them (None: never)."""

    ladder: Ladder = ()
    cluster_above: Optional[int] = None
    loop_above: Optional[int] = None
    wide_above: Optional[int] = None


@dataclass(frozen=True)
class RowEngine:
    """The register-bucket / cluster / loop configuration of one row kernel template.

    ``slots``          reduction slots (values × parities) in the shared buffers;
    ``buckets``        register row-length buckets (those above ``caps[dtype]`` are not built);
    ``caps``           longest row one CTA keeps in registers, per dtype;
    ``per_thread``     elements a thread holds in a bucket (threads per row = bucket / this,
                       clamped to [32, ``max_tpr``]; more vectors a thread beyond the clamp);
    ``max_tpr``        most threads per row;
    ``clusters``       the (CTAs, half) cluster slices built for sm90a (a policy's ladder picks
                       among them);
    ``wide``           the two-byte wide alternatives (None: none);
    ``short_generic``  the misaligned-path geometry for rows up to ``short_generic_max`` (a
                       warp per row; None: the generic loop for every length);
    ``solo_rows``      a CTA whose row spans several warps holds one row (kernels with
                       data-dependent step counts keep their barriers CTA-uniform)."""

    slots: int
    buckets: Tuple[int, ...]
    caps: ByDtype
    per_thread: ByDtype
    max_tpr: int = 1024
    clusters: Ladder = ()
    wide: Optional[WideRows] = None
    short_generic: Optional[RowGeometry] = None
    short_generic_max: int = 0
    solo_rows: bool = False

    # ------------------------------------------------------------------- geometries
    def bucket(self, dtype: str, length: int) -> RowGeometry:
        """The register bucket of row length ``length``; short rows pack several rows per
        128-thread CTA."""
        vec = max_vec(dtype)
        tpr = min(max(length // self.per_thread[dtype], WARP), self.max_tpr)
        chunks = max(length // (vec * tpr), 1)
        rows = 1 if self.solo_rows and tpr > WARP else max(1, PACK_THREADS // tpr)
        return RowGeometry(vec, tpr, rows, chunks, 1)

    def cluster(self, dtype: str, ctas: int, half: bool = False) -> RowGeometry:
        """A row of ``ctas`` slices, each the largest bucket (or half of it)."""
        return dataclasses.replace(self.bucket(dtype, self.caps[dtype] // (2 if half else 1)),
                                   cluster=ctas)

    def wide_bucket(self, dtype: str, length: int) -> RowGeometry:
        """Bucket ``length`` at half the threads per row and twice the chunks."""
        b = self.bucket(dtype, length)
        return dataclasses.replace(b, tpr=b.tpr // 2, chunks=b.chunks * 2)

    def wide_cluster(self, dtype: str, ctas: int) -> RowGeometry:
        """A cluster of ``ctas`` wide slices of the largest bucket."""
        return dataclasses.replace(self.wide_bucket(dtype, self.caps[dtype]), cluster=ctas)

    def loop(self, dtype: str) -> RowGeometry:
        """The vectorised loop SKU (any N; 16-byte accesses)."""
        return RowGeometry(max_vec(dtype), LOOP_TPR, 1, 0, 1)

    def generic(self, n: Optional[int] = None) -> RowGeometry:
        """The element-wise loop for misaligned operands (any alignment; a warp per row for
        rows up to ``short_generic_max`` when the engine has one)."""
        if self.short_generic is not None and n is not None and n <= self.short_generic_max:
            return self.short_generic
        return RowGeometry(1, GENERIC_TPR, 1, 0, 1)

    def space(self, dtype: str) -> Iterator[RowGeometry]:
        """Every geometry built for ``dtype`` (no repeats): buckets up to the cap, the cluster
        slices, the loops, then the wide alternatives."""
        seen = []
        for g in self._all(dtype):
            if g not in seen:
                seen.append(g)
                yield g

    def _all(self, dtype: str) -> Iterator[RowGeometry]:
        for b in self.buckets:
            if b <= self.caps[dtype]:
                yield self.bucket(dtype, b)
        for c, half in self.clusters:
            yield self.cluster(dtype, c, half)
        yield self.loop(dtype)
        yield self.generic()
        if self.short_generic is not None:
            yield self.short_generic
        w = self.wide
        if w is not None and dtype in w.dtypes:
            for b in w.buckets:
                yield self.wide_bucket(dtype, b)
            for c in w.clusters:
                yield self.wide_cluster(dtype, c)

    def launch(self, geo: RowGeometry) -> LaunchGeometry:
        """Block = tpr·rows threads; shared memory = the cross-warp reduction buffer (rows ×
        warps × slots, 8-byte words) plus, for clusters, the buffer receiving the peers'
        partials (rows × slots × CTAs); cluster = CTAs per row."""
        tpr, rows, c = geo.tpr, geo.rows, geo.cluster
        smem = 0 if tpr <= WARP else rows * (tpr // WARP) * self.slots * 8 + 64
        if c > 1:
            smem += rows * self.slots * c * 8 + 64
        return LaunchGeometry(threads=tpr * rows, smem_bytes=smem, cluster=c)

    # ----------------------------------------------------------------- plan-side choice
    def choose(self, dtype: str, n: int, sm90a: bool, policy: RowPolicy = RowPolicy()) \
            -> RowGeometry:
        """The geometry for rows of ``n`` elements: the wide alternative when the policy asks
        for it, the smallest register bucket that holds the row, on sm90a the first ladder rung
        that holds it, else the vectorised loop."""
        if policy.wide_above is not None and n > policy.wide_above:
            g = self._wide_choice(dtype, n, sm90a)
            if g is not None:
                return g
        clusters = sm90a and bool(self.clusters)
        if clusters and policy.cluster_above is not None and n > policy.cluster_above:
            g = self._rung(dtype, n, policy.ladder)
            if g is not None:
                return g
        if n <= self.caps[dtype]:
            return self.bucket(dtype, next(b for b in self.buckets if b >= n))
        if clusters and (policy.loop_above is None or n <= policy.loop_above):
            g = self._rung(dtype, n, policy.ladder)
            if g is not None:
                return g
        return self.loop(dtype)

    def _rung(self, dtype: str, n: int, ladder: Ladder) -> Optional[RowGeometry]:
        for c, half in ladder:
            if (c, half) not in self.clusters:
                raise UnsupportedError(f"cluster rung ({c}, half={half}) is not built; built: "
                                       f"{self.clusters}")
            g = self.cluster(dtype, c, half)
            if n <= g.capacity:
                return g
        return None

    def _wide_choice(self, dtype: str, n: int, sm90a: bool) -> Optional[RowGeometry]:
        w = self.wide
        if w is None or dtype not in w.dtypes:
            return None
        if n <= self.caps[dtype]:
            b = next(x for x in self.buckets if x >= n)
            return self.wide_bucket(dtype, b) if b in w.buckets else None
        if not sm90a:
            return None
        for c in w.clusters:
            g = self.wide_cluster(dtype, c)
            if n <= g.capacity:
                return g
        return None


PerDtype = Union[Mapping[str, object], Tuple[Tuple[str, object], ...]]


def dtype_pairs(value: PerDtype) -> Tuple[Tuple[str, object], ...]:
    """A per-dtype setting as sorted ``(dtype, value)`` pairs (hashable, for frozen tuning
    records); accepts a mapping or pairs."""
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), v) for k, v in items))


def ladder_of(value) -> Ladder:
    """A cluster ladder as a tuple of (int CTAs, bool half) rungs."""
    return tuple((int(c), bool(h)) for c, h in value)


__all__ = ["ByDtype", "Ladder", "RowEngine", "RowGeometry", "RowPolicy", "Rung", "WideRows",
           "dtype_pairs", "ladder_of", "max_vec"]
