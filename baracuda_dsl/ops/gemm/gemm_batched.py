"""Batched and grouped GEMM (issue 7's ``BatchedGemmPlan`` / ``GroupedGemmPlan``):

    c[i] = act(alpha · a[i] @ b[i] + beta · c[i] + bias[i])          for every batch entry i

``BatchedGemmPlan``: a (batch, m, k), b (batch, k, n), c (batch, m, n) strided views (any
strides per matrix, as :class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan`); a batch stride of 0 on a or
b broadcasts it (one shared operand); c may not broadcast.  bias (n,) is shared, (batch, n) is
per entry.  ``GroupedGemmPlan``: a list of independent problems (m_i, n_i, k_i) — typically
MoE experts with different m — with one a / b / c (/ bias) view per problem.

Batched routing: the entries are one strided view each, so they share their layouts; when
entry 0 routes to the ``mma.sync`` kernel (``gemm_mma``: f16 / bf16, see GemmPlan) and the
batch strides of a and b keep every entry's base 16-byte aligned (a multiple of 8 elements, or
0), the whole batch is **one launch** with the kernel's batch index (grid (tiles, entries, 1),
per-entry element offsets = the batch strides of a, b, c and bias; at most 65535 entries per
launch, so larger batches take ceil(batch / 65535) launches).  Other routes (the sm90a wgmma
kernel for large entries, tf32, SIMT, misaligned batch strides) are a **launch loop**: one
GemmPlan launch per entry, in order, on the caller's stream, each with views of the entry at
its element offset.  ``batch == 1`` is exactly GemmPlan (including its split-K and workspace);
for batch > 1 the per-entry GemmPlan is selected with ``GemmTuning.splits = 1`` (the batch fills
the grid; no workspace).  Both plans take GemmPlan's tuning (``GemmTuning(tile=..., splits=...)``
in the preference; a split count > 1 only for batch == 1).  ``GroupedGemmPlan`` is a launch loop
(a persistent tile scheduler over the problem list is planned).  Everything (the whole strided
views, dtypes, devices, shapes of every problem, the GemmPlan checks of the first entry) is
validated before the first launch.
dtypes, epilogues and precision are GemmPlan's: f16 / bf16 on tensor cores with f32
accumulate, strict f32, f64.  ``plan.sku()`` reports the GemmPlan SKU (of the first problem for
the grouped plan; ``plan.gemm_plans`` lists them all).  Workspace: the GemmPlan's (non-zero only
when split), one buffer reused by every launch; deterministic; c must not alias a, b or bias,
and c's entries must not overlap each other (the batched launch writes them concurrently).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import math

from ...dtypes import DType
from ...errors import DeviceMismatchError, InvalidProblemError, UnsupportedError
from ...plan import Plan, check_writable_no_overlap, view_arg
from ...tensor import TensorView
from .gemm import GemmArgs, GemmDescriptor, GemmPlan
from .specs import gemm as spec
from .tuning import GemmTuning, with_gemm_tuning

_I32 = 2 ** 31 - 1
#: most batch entries of one gemm_mma launch (grid y limit); larger batches are chunked
MAX_GRID_BATCH = 65535


def _check_count(v, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise InvalidProblemError(f"{what} must be an int >= 0, got {v!r}")
    if v > _I32:
        raise UnsupportedError(f"{what} = {v} exceeds 2**31 - 1")
    return v


def _entry(v: TensorView, i: int) -> TensorView:
    """The (rows, cols) matrix ``v[i]`` of a (batch, rows, cols) view (stride 0 broadcasts)."""
    return TensorView._trusted(v.ptr + i * v.strides[0] * v.dtype.itemsize, v.shape[1:],
                               v.strides[1:], v.dtype, v.device, v.owner)


class _GemmFields:
    """What the batched and grouped descriptors share: the GemmDescriptor fields dtype /
    out_dtype / alpha / beta / epilogue."""

    def _gemm_desc(self, m: int, n: int, k: int) -> GemmDescriptor:
        return GemmDescriptor(m, n, k, self.dtype, self.out_dtype, self.alpha, self.beta,
                              self.epilogue)

    def _adopt(self, g: GemmDescriptor) -> None:
        """Take GemmDescriptor ``g``'s validated, normalised fields."""
        for name in ("dtype", "out_dtype", "alpha", "beta"):
            object.__setattr__(self, name, getattr(g, name))

    @property
    def has_bias(self) -> bool:
        return self.epilogue != "identity"


@dataclass(frozen=True)
class BatchedGemmDescriptor(_GemmFields):
    """``batch`` independent c (m, n) = act(alpha · a (m, k) @ b (k, n) + beta · c + bias);
    the other fields exactly as :class:`GemmDescriptor`."""

    batch: int
    m: int
    n: int
    k: int
    dtype: DType
    out_dtype: Optional[DType] = None
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: str = "identity"

    def __post_init__(self):
        _check_count(self.batch, "BatchedGemm: batch")
        self._adopt(self.gemm)

    @property
    def gemm(self) -> GemmDescriptor:
        """The per-entry GemmDescriptor."""
        return self._gemm_desc(self.m, self.n, self.k)


@dataclass
class BatchedGemmArgs:
    """a (batch, m, k), b (batch, k, n) — batch stride 0 broadcasts — c (batch, m, n) output
    (read when beta != 0; no broadcast), bias (n,) shared or (batch, n) for the bias epilogues
    (out_dtype)."""

    a: object
    b: object
    c: object
    bias: object = None


class BatchedGemmPlan(Plan):
    """Strided-batch GEMM: one batched ``gemm_mma`` launch when the entries route to the
    mma.sync kernel, else a loop of GemmPlan launches (one per entry, in order, on the caller's
    stream; see the module docstring).  ``sku()`` is the GemmPlan's SKU."""

    descriptor = BatchedGemmDescriptor

    def _plan(self) -> None:
        d = self.desc
        pref = self.pref
        if d.batch != 1:
            tuning = pref.tuning_for(GemmTuning)
            if tuning.splits not in (None, 1):
                raise UnsupportedError(f"BatchedGemm: split-K is wired for batch == 1; got "
                                       f"splits={tuning.splits!r} with batch {d.batch}")
            pref = with_gemm_tuning(pref, GemmTuning(tile=tuning.tile, splits=1))
        self.gemm_plan = GemmPlan.select(d.gemm, pref)
        self._sku = self.gemm_plan.sku()

    def is_empty(self) -> bool:
        d = self.desc
        return d.batch == 0 or d.m == 0 or d.n == 0

    def workspace_size(self) -> int:
        """The GemmPlan's (non-zero only for batch == 1 with split-K)."""
        return self.gemm_plan.workspace_size()

    def _bind(self, args):
        """The checked whole views (a, b, c, bias as (batch, n)); entry 0 also passes the
        GemmPlan's checks."""
        if not isinstance(args, BatchedGemmArgs):
            raise InvalidProblemError(f"BatchedGemmPlan needs BatchedGemmArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        B = d.batch
        a = view_arg(args.a, "a", shape=(B, d.m, d.k), dtype=d.dtype)
        b = view_arg(args.b, "b", shape=(B, d.k, d.n), dtype=d.dtype, device=a.device)
        c = view_arg(args.c, "c", shape=(B, d.m, d.n), dtype=d.out_dtype, device=a.device)
        check_writable_no_overlap(c, "c")
        bias = None
        if d.has_bias:
            if args.bias is None:
                raise InvalidProblemError("argument bias is required")
            bv = view_arg(args.bias, "bias", dtype=d.out_dtype, device=a.device)
            if bv.shape == (d.n,):
                bias = bv.with_shape((B, d.n), (0, bv.strides[0]))
            elif bv.shape == (B, d.n):
                bias = bv
            else:
                raise InvalidProblemError(f"bias: shape {bv.shape} != expected ({d.n},) or "
                                          f"({B}, {d.n})")
        elif args.bias is not None:
            raise InvalidProblemError("BatchedGemm: bias given but the epilogue is 'identity'")
        if B and not self.is_empty():
            self.gemm_plan.can_implement(self._entry_args(a, b, c, bias, 0))
        return a, b, c, bias

    @staticmethod
    def _entry_args(a, b, c, bias, i: int) -> GemmArgs:
        return GemmArgs(_entry(a, i), _entry(b, i), _entry(c, i),
                        None if bias is None else _entry(bias, i))

    def kernel_for(self, args):
        """(template, knobs, batched): the GEMM kernel the entries run on and whether the batch
        is one batched launch (True) or a loop of GemmPlan launches (False); checks ``args``."""
        a, b, c, bias = self._bind(args)
        tmpl, knobs, _ = self._batched_route(a, b, c, bias)
        if tmpl is None:
            tmpl, knobs = self.gemm_plan.kernel_for(self._entry_args(a, b, c, bias, 0))
            return tmpl, knobs, False
        return tmpl, knobs, True

    def _batched_route(self, a, b, c, bias):
        """(GEMM_MMA, knobs, lds) when the whole batch can be one batched gemm_mma launch,
        else (None, None, None)."""
        d = self.desc
        g = self.gemm_plan
        if d.batch < 2 or g.splits > 1:
            return None, None, None
        e = self._entry_args(a, b, c, bias, 0)
        tmpl, knobs, lds = g.route(e.a, e.b, e.c, e.bias)
        if tmpl is not spec.GEMM_MMA:
            return None, None, None
        isz = d.dtype.itemsize
        if (a.strides[0] * isz) % 16 or (b.strides[0] * isz) % 16:
            return None, None, None          # entries would differ in alignment: loop
        return tmpl, knobs, lds

    def _launch(self, bound, stream: int, ws) -> None:
        """One batched gemm_mma launch (per 65535 entries) or one GemmPlan launch per entry, in
        order, on ``stream``."""
        a, b, c, bias = bound
        g = self.gemm_plan
        tmpl, knobs, lds = self._batched_route(a, b, c, bias)
        if tmpl is not None:
            self._launch_batched(a, b, c, bias, knobs, lds, stream)
            return
        for i in range(self.desc.batch):
            g.run(self._entry_args(a, b, c, bias, i), stream=stream, workspace=ws)

    def _launch_batched(self, a, b, c, bias, knobs: spec.MmaKnobs, lds, stream: int) -> None:
        d = self.desc
        g = self.gemm_plan
        lk = g._kernel(spec.GEMM_MMA, knobs, a.device)
        bm, bn = spec.TILES[knobs.tile][:2]
        tiles = math.ceil(d.m / bm) * math.ceil(d.n / bn)
        isz, osz = d.dtype.itemsize, d.out_dtype.itemsize
        sa, sb, sc = a.strides[0], b.strides[0], c.strides[0]
        if bias is not None:
            pbias, sbias, bs, hb = bias.ptr, bias.strides[0], bias.strides[1], 1
        else:
            pbias, sbias, bs, hb = c.ptr, 0, 0, 0
        for z0 in range(0, d.batch, MAX_GRID_BATCH):
            nz = min(MAX_GRID_BATCH, d.batch - z0)
            lk.launch((tiles, nz, 1),
                      [a.ptr + z0 * sa * isz, b.ptr + z0 * sb * isz, c.ptr + z0 * sc * osz,
                       pbias + z0 * sbias * osz, d.m, d.n, d.k, lds[0], lds[1], c.strides[1],
                       c.strides[2], bs, d.alpha, d.beta, hb, sa, sb, sc, sbias, d.k], stream)


# ------------------------------------------------------------------------------- grouped
@dataclass(frozen=True)
class GroupedGemmDescriptor(_GemmFields):
    """Independent problems ``problems[g] = (m_g, n_g, k_g)`` (e.g. MoE experts with different
    m; any extent may be 0), all with the same dtype / out_dtype / alpha / beta / epilogue
    (fields as :class:`GemmDescriptor`)."""

    problems: Tuple[Tuple[int, int, int], ...]
    dtype: DType
    out_dtype: Optional[DType] = None
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: str = "identity"

    def __post_init__(self):
        probs = self.problems
        if isinstance(probs, (str, bytes)) or not isinstance(probs, Sequence):
            raise InvalidProblemError(f"GroupedGemm: problems must be a sequence of (m, n, k), "
                                      f"got {probs!r}")
        out = []
        for g, p in enumerate(probs):
            if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != 3:
                raise InvalidProblemError(f"GroupedGemm: problem {g} must be (m, n, k), got {p!r}")
            out.append(tuple(_check_count(v, f"GroupedGemm: problem {g} {nm}")
                             for v, nm in zip(p, "mnk")))
        object.__setattr__(self, "problems", tuple(out))
        self._adopt(self._gemm_desc(1, 1, 1))

    def gemm(self, g: int) -> GemmDescriptor:
        """The GemmDescriptor of problem ``g``."""
        return self._gemm_desc(*self.problems[g])


@dataclass
class GroupedGemmArgs:
    """One view per problem: a_list[g] (m_g, k_g), b_list[g] (k_g, n_g), c_list[g] (m_g, n_g),
    bias_list[g] (n_g,) for the bias epilogues."""

    a_list: Sequence
    b_list: Sequence
    c_list: Sequence
    bias_list: Optional[Sequence] = None


class GroupedGemmPlan(Plan):
    """A list of independent GEMMs as a loop of GemmPlan launches (problems with m, n = 0 are
    skipped; see the module docstring).  One GemmPlan per distinct (m, n, k), selected with the
    caller's preference (its GemmTuning applies to every problem); ``sku()`` is the first
    problem's (``gemm_plans`` has one per problem)."""

    descriptor = GroupedGemmDescriptor

    def _plan(self) -> None:
        d = self.desc
        by_shape = {}
        plans = []
        for g, shp in enumerate(d.problems):
            p = by_shape.get(shp)
            if p is None:
                p = by_shape[shp] = GemmPlan.select(d.gemm(g), self.pref)
            plans.append(p)
        if not plans:   # no problems: a SKU is still reported (that of a 1×1×1 problem)
            first = GemmPlan.select(GemmDescriptor(1, 1, 1, d.dtype, d.out_dtype,
                                                   epilogue=d.epilogue), self.pref)
        else:
            first = plans[0]
        self._sku = first.sku()
        self.gemm_plans = tuple(plans)

    def is_empty(self) -> bool:
        return all(m == 0 or n == 0 for m, n, _ in self.desc.problems)

    def workspace_size(self) -> int:
        """The largest of the GemmPlans'; one buffer serves every problem."""
        return max((p.workspace_size() for p in self.gemm_plans), default=0)

    def _lists(self, args):
        if not isinstance(args, GroupedGemmArgs):
            raise InvalidProblemError(f"GroupedGemmPlan needs GroupedGemmArgs, got "
                                      f"{type(args).__name__}")
        d = self.desc
        G = len(d.problems)
        names = ("a_list", "b_list", "c_list") + (("bias_list",) if d.has_bias else ())
        if not d.has_bias and args.bias_list is not None:
            raise InvalidProblemError("GroupedGemm: bias_list given but the epilogue is "
                                      "'identity'")
        out = []
        for nm in names:
            lst = getattr(args, nm)
            if lst is None:
                raise InvalidProblemError(f"argument {nm} is required")
            if isinstance(lst, (str, bytes)) or not isinstance(lst, Sequence):
                raise InvalidProblemError(f"{nm} must be a list of views, got "
                                          f"{type(lst).__name__}")
            if len(lst) != G:
                raise InvalidProblemError(f"{nm}: {len(lst)} views for {G} problems")
            out.append(lst)
        if not d.has_bias:
            out.append([None] * G)
        return out

    def _bind(self, args):
        """Per problem, the checked GemmArgs (views)."""
        a_l, b_l, c_l, bias_l = self._lists(args)
        res = []
        dev = None
        for g, p in enumerate(self.gemm_plans):
            a = view_arg(a_l[g], f"a_list[{g}]")
            if dev is None:
                dev = a.device
            elif a.device != dev:
                raise DeviceMismatchError(f"a_list[{g}]: on device {a.device}, problem 0 is on "
                                          f"device {dev}")
            ga = GemmArgs(a, b_l[g], c_l[g], bias_l[g])
            try:
                p.can_implement(ga)
            except Exception as e:
                if hasattr(e, "add_note"):
                    e.add_note(f"(GroupedGemm problem {g} of {len(self.gemm_plans)})")
                raise
            res.append(ga)
        return res

    def _launch(self, checked, stream: int, ws) -> None:
        """Launch the non-empty problems in order."""
        for p, ga in zip(self.gemm_plans, checked):
            if not p.is_empty():
                p.run(ga, stream=stream, workspace=ws)
