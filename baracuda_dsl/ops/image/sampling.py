"""grid_sample and affine_grid, forward and backward (torch.nn.functional.grid_sample /
affine_grid semantics and argument names).

``grid_sample``: ``input`` (N, C, H, W) or (N, C, D, H, W), ``grid`` (N, Ho, Wo, 2) or
(N, Do, Ho, Wo, 3) of normalised (x, y[, z]) coordinates in [-1, 1] → ``output`` (N, C, Ho, Wo) /
(N, C, Do, Ho, Wo).  Per dim of input extent S a coordinate c maps to ``((c + 1) / 2)·(S − 1)``
(``align_corners``) or ``((c + 1)·S − 1) / 2``; ``padding_mode`` ``zeros`` (taps outside read 0),
``border`` (coordinates clipped to [0, S − 1]) or ``reflection`` (reflected about the border —
the corner centres with align_corners, the image edges without — then clipped); a non-finite
coordinate or one beyond the int32 range reads as outside.  ``mode`` ``bilinear`` (trilinear in
3-D), ``nearest`` (round half to even) or ``bicubic`` (2-D only, A = −0.75, every tap padded
separately).  Exactly torch's arithmetic (aten/native/GridSampler.h); math in f32 (f64 for f64).

Backward (``GridSampleBackwardPlan``; torch's ``output_mask`` = the descriptor's
``input_requires_grad`` / ``grid_requires_grad``): ``grad_input`` by scatter — float atomics into
an f32 accumulator (f64 for f64; for f16 / bf16 a dense workspace of ``workspace_size()`` bytes,
then cast; for f32 / f64 ``grad_input`` itself, zeroed first): **non-deterministic (atomics)**,
the rounding of each element depends on the order of its additions.  ``grad_grid``: one thread
per output point sums over the channels (no atomics, deterministic); zeros for ``nearest``.

``affine_grid``: ``theta`` (N, 2, 3) or (N, 3, 4), ``size`` (N, C, H, W) / (N, C, D, H, W) →
``grid`` (N, H, W, 2) / (N, D, H, W, 3), ``grid[n, p] = θ[n] · (x, y[, z], 1)`` with the base
coordinates of torch's ``linspace(-1, 1, S)`` (scaled by (S − 1)/S without align_corners; 0 when
S = 1).  Backward ``dθ[n] = Σ_p d_grid[n, p] ⊗ (x, y[, z], 1)``: one CTA per (n, row), a
fixed-order block reduction (deterministic, bit-stable).

Dtypes f32, f16, bf16, f64 (all operands of one dtype, as torch); any operand strides, outputs
too (no broadcast strides); empty batches launch nothing.  Int64 index math.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import FP4, DType, float32, float64
from ...errors import InvalidProblemError, MisalignedOperandError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, check_writable_no_overlap, prod, view_arg
from ...tensor import check_shape, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .specs import sampling as spec
from .specs.sampling import AffineGridKnobs, GridAccKnobs, GridSampleKnobs

__all__ = [
    "GridSampleDescriptor", "GridSampleArgs", "GridSampleBackwardArgs", "GridSamplePlan",
    "GridSampleBackwardPlan", "AffineGridDescriptor", "AffineGridArgs",
    "AffineGridBackwardArgs", "AffineGridPlan", "AffineGridBackwardPlan", "affine_base_coords",
]

GRID_MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
_MAX_GRID = 2**31 - 1


def affine_base_coords(S: int, align_corners: bool):
    """torch's base coordinates of a dim of extent ``S`` (host reference of the kernel's
    formula): ``[0.0]`` for S = 1, else ``(2i − (S − 1)) / (S − 1 or S)``."""
    if S == 1:
        return [0.0]
    den = S - 1 if align_corners else S
    return [(2 * i - (S - 1)) / den for i in range(S)]


def _bool(v, what: str, name: str) -> bool:
    if not isinstance(v, (bool, int)) or isinstance(v, int) and v not in (0, 1):
        raise InvalidProblemError(f"{what}: {name} must be a bool, got {v!r}")
    return bool(v)


@dataclass(frozen=True)
class GridSampleDescriptor:
    """grid_sample of an ``input_shape`` (N, C, H, W) / (N, C, D, H, W) image at the points of a
    ``grid_shape`` (N, Ho, Wo, 2) / (N, Do, Ho, Wo, 3) grid: ``mode`` bilinear | nearest |
    bicubic (2-D only), ``padding_mode`` zeros | border | reflection, ``align_corners``, ``dtype``
    (f32, f16, bf16, f64; input, grid and outputs alike).  The backward plan reads
    ``input_requires_grad`` / ``grid_requires_grad`` (torch's output_mask).  torch's rules
    (InvalidProblemError): matching ranks and batch, a last grid dim of 2 / 3, non-empty input
    spatial dims; N, C and the grid's point dims may be 0."""

    input_shape: Tuple[int, ...]
    grid_shape: Tuple[int, ...]
    mode: str = "bilinear"
    padding_mode: str = "zeros"
    align_corners: bool = False
    dtype: DType = float32
    input_requires_grad: bool = True
    grid_requires_grad: bool = True

    def __post_init__(self):
        what = "GridSample"
        xs = check_shape(self.input_shape, f"{what}: input")
        gs = check_shape(self.grid_shape, f"{what}: grid")
        if len(xs) not in (4, 5):
            raise InvalidProblemError(f"{what}: input must be (N, C, H, W) or (N, C, D, H, W), "
                                      f"got shape {xs}")
        k = len(xs) - 2
        if len(gs) != len(xs) or gs[-1] != k:
            raise InvalidProblemError(f"{what}: grid must be (N, *out_spatial, {k}) for a "
                                      f"{len(xs)}-D input, got shape {gs}")
        if gs[0] != xs[0]:
            raise InvalidProblemError(f"{what}: grid batch {gs[0]} != input batch {xs[0]}")
        if any(s < 1 for s in xs[2:]):
            raise InvalidProblemError(f"{what}: input spatial dims must be non-empty, got {xs}")
        if self.mode not in GRID_MODES:
            raise InvalidProblemError(f"{what}: mode must be one of {GRID_MODES}, got "
                                      f"{self.mode!r}")
        if self.mode == "bicubic" and k != 2:
            raise InvalidProblemError(f"{what}: bicubic interpolation supports 4-D input only")
        if self.padding_mode not in PADDING_MODES:
            raise InvalidProblemError(f"{what}: padding_mode must be one of {PADDING_MODES}, "
                                      f"got {self.padding_mode!r}")
        object.__setattr__(self, "input_shape", xs)
        object.__setattr__(self, "grid_shape", gs)
        object.__setattr__(self, "align_corners", _bool(self.align_corners, what,
                                                        "align_corners"))
        object.__setattr__(self, "input_requires_grad", _bool(self.input_requires_grad, what,
                                                              "input_requires_grad"))
        object.__setattr__(self, "grid_requires_grad", _bool(self.grid_requires_grad, what,
                                                             "grid_requires_grad"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, what))

    @property
    def spatial(self) -> int:
        return len(self.input_shape) - 2

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.input_shape[:2] + self.grid_shape[1:-1]

    @property
    def points(self) -> int:
        """N · (output points per image): the kernels' thread count."""
        return prod(self.grid_shape[:-1])


@dataclass
class GridSampleArgs:
    """Forward operands: ``input`` (``desc.input_shape``), ``grid`` (``desc.grid_shape``),
    ``output`` (``desc.out_shape``); any strides (the output's not broadcast)."""

    input: object
    grid: object
    output: object


@dataclass
class GridSampleBackwardArgs:
    """Backward operands: ``grad_output`` (``desc.out_shape``), the forward's ``input`` and
    ``grid``; outputs ``grad_input`` (``desc.input_shape``; required exactly when
    ``desc.input_requires_grad``) and ``grad_grid`` (``desc.grid_shape``; exactly when
    ``desc.grid_requires_grad``).  Any strides."""

    grad_output: object
    input: object
    grid: object
    grad_input: object = None
    grad_grid: object = None


def _img5(strides) -> Tuple[int, ...]:
    """(n, c, d, h, w) strides of an image: 2-D ones get a 0 depth stride."""
    s = tuple(int(a) for a in strides)
    return s if len(s) == 5 else s[:2] + (0,) + s[2:]


def _grid5(strides) -> Tuple[int, ...]:
    """(n, d, h, w, component) strides of a grid: 2-D ones get a 0 depth stride."""
    s = tuple(int(a) for a in strides)
    return s if len(s) == 5 else s[:1] + (0,) + s[1:]


def _vol(shape) -> Tuple[int, ...]:
    """The spatial extents of an image / grid point shape padded to (D, H, W)."""
    return (1,) * (3 - len(shape)) + tuple(shape)


class _GridSampleBase(Plan):
    """Shared planning of the grid_sample plans."""

    _backward = False

    def _plan(self) -> None:
        d = self.desc
        n, c = d.input_shape[:2]
        self._e = (n, c) + _vol(d.input_shape[2:]) + _vol(d.grid_shape[1:-1])
        self._flags = (PADDING_MODES.index(d.padding_mode), 1 if d.align_corners else 0,
                       1 if d.spatial == 3 else 0)
        self._npts = d.points
        self._numel_in = prod(d.input_shape)
        if -(-max(self._npts, self._numel_in) // spec.THREADS) > _MAX_GRID:
            raise UnsupportedError("grid_sample: the problem exceeds the grid limit")
        self._knobs = GridSampleKnobs(d.dtype.short, d.mode)
        ct = float64 if d.dtype is float64 else float32
        atomics = self._backward and d.input_requires_grad
        pg = PrecisionGuarantee(math_precision=ct, accumulator=ct,
                                bit_stable_on_same_hardware=not atomics,
                                deterministic=not atomics)
        self._template = spec.GRID_SAMPLE_BW if self._backward else spec.GRID_SAMPLE_FW
        self._sku = KernelSku(OpCategory.IMAGE,
                              "grid_sample" + ("_backward" if self._backward else ""), d.dtype,
                              self._arch, BackendKind.CUTE_DSL, pg,
                              template=self._template.name, knobs=freeze_knobs(self._knobs))


class GridSamplePlan(_GridSampleBase):
    """grid_sample forward (``GridSampleArgs(input, grid, output)``): one thread per (n, output
    point) looping over the channels, so each point's taps and weights are computed once and
    reused C times; see the module docstring for the arithmetic."""

    descriptor = GridSampleDescriptor

    def is_empty(self) -> bool:
        return self._npts == 0 or self._e[1] == 0

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.input, "input", shape=d.input_shape, dtype=d.dtype)
        g = view_arg(args.grid, "grid", shape=d.grid_shape, dtype=d.dtype, device=x.device)
        y = view_arg(args.output, "output", shape=d.out_shape, dtype=d.dtype, device=x.device)
        check_writable_no_overlap(y, "output")
        return x, g, y

    def _launch(self, bound, stream: int, ws) -> None:
        x, g, y = bound
        kern = self._kernel(self._template, self._knobs, x.device)
        kern.launch((-(-self._npts // spec.THREADS), 1, 1),
                    [x.ptr, g.ptr, y.ptr, self._npts, *self._e, *_img5(x.strides),
                     *_grid5(g.strides), *_img5(y.strides), *self._flags], stream)


class GridSampleBackwardPlan(_GridSampleBase):
    """Gradient of grid_sample (``GridSampleBackwardArgs``): ``grad_input`` by atomic scatter —
    non-deterministic (atomics); f16 / bf16 accumulate in an f32 workspace of
    ``workspace_size()`` bytes (numel(input) · 4), f32 / f64 in ``grad_input`` itself —
    and ``grad_grid`` per point (deterministic).  Up to three launches: zero the accumulator,
    scatter / gather (``grid_sample_bw``), cast (half types)."""

    descriptor = GridSampleDescriptor
    _backward = True

    def _plan(self) -> None:
        super()._plan()
        d = self.desc
        self._work_dx = d.input_requires_grad and self._numel_in > 0
        self._work_dg = d.grid_requires_grad and prod(d.grid_shape) > 0
        self._in_place = d.dtype in (float32, float64)
        self._acc_knobs = GridAccKnobs(d.dtype.short)

    def workspace_size(self) -> int:
        return 0 if self._in_place or not self._work_dx else 4 * self._numel_in

    def is_empty(self) -> bool:
        return not (self._work_dx or self._work_dg)

    def _bind(self, args):
        d = self.desc
        dy = view_arg(args.grad_output, "grad_output", shape=d.out_shape, dtype=d.dtype)
        x = view_arg(args.input, "input", shape=d.input_shape, dtype=d.dtype, device=dy.device)
        g = view_arg(args.grid, "grid", shape=d.grid_shape, dtype=d.dtype, device=dy.device)
        outs = []
        for name, obj, want, shape in (("grad_input", args.grad_input, d.input_requires_grad,
                                        d.input_shape),
                                       ("grad_grid", args.grad_grid, d.grid_requires_grad,
                                        d.grid_shape)):
            if not want:
                if obj is not None:
                    raise InvalidProblemError(f"{name} given but the descriptor's "
                                              f"{name.replace('grad_', '')}_requires_grad is "
                                              f"False")
                outs.append(None)
                continue
            v = view_arg(obj, name, shape=shape, dtype=d.dtype, device=dy.device)
            check_writable_no_overlap(v, name)
            outs.append(v)
        return (dy, x, g, *outs)

    def _launch(self, bound, stream: int, ws) -> None:
        dy, x, g, dx, dgd = bound
        dev = dy.device
        e5 = self._e[:5]
        acc, accs = dy.ptr, (0,) * 5
        acc_kern = None
        if self._work_dx:
            if self._in_place:
                acc, accs = dx.ptr, _img5(dx.strides)
            else:
                if ws.ptr % 4:
                    raise MisalignedOperandError(f"workspace: pointer {ws.ptr:#x} is not "
                                                 f"aligned to 4 bytes")
                acc, accs = ws.ptr, _img5(contiguous_strides(self.desc.input_shape))
            acc_kern = self._kernel(spec.GRID_SAMPLE_ACC, self._acc_knobs, dev)
            blocks = (-(-self._numel_in // spec.THREADS), 1, 1)
            acc_kern.launch(blocks, [acc, dx.ptr, self._numel_in, *e5, *accs, *_img5(dx.strides),
                                     0], stream)
        if self._npts:
            kern = self._kernel(self._template, self._knobs, dev)
            dgs = _grid5(dgd.strides) if dgd is not None else (0,) * 5
            kern.launch((-(-self._npts // spec.THREADS), 1, 1),
                        [dy.ptr, x.ptr, g.ptr, acc, dgd.ptr if dgd is not None else dy.ptr,
                         self._npts, *self._e, *_img5(dy.strides), *_img5(x.strides),
                         *_grid5(g.strides), *accs, *dgs, *self._flags,
                         1 if self._work_dx else 0, 1 if self._work_dg else 0], stream)
        if self._work_dx and not self._in_place:
            acc_kern.launch((-(-self._numel_in // spec.THREADS), 1, 1),
                            [acc, dx.ptr, self._numel_in, *e5, *accs, *_img5(dx.strides), 1],
                            stream)


# ------------------------------------------------------------------------------ affine_grid
@dataclass(frozen=True)
class AffineGridDescriptor:
    """affine_grid for an output ``size`` (N, C, H, W) → grid (N, H, W, 2) from theta (N, 2, 3),
    or (N, C, D, H, W) → (N, D, H, W, 3) from theta (N, 3, 4); ``align_corners``; ``dtype`` (f32,
    f16, bf16, f64).  Spatial extents >= 1 (torch); N (and C, unused) may be 0."""

    size: Tuple[int, ...]
    align_corners: bool = False
    dtype: DType = float32

    def __post_init__(self):
        what = "AffineGrid"
        s = check_shape(self.size, f"{what}: size")
        if len(s) not in (4, 5):
            raise InvalidProblemError(f"{what}: size must be (N, C, H, W) or (N, C, D, H, W), "
                                      f"got {s}")
        if any(v < 1 for v in s[2:]):
            raise InvalidProblemError(f"{what}: expected positive spatial sizes, got {s}")
        object.__setattr__(self, "size", s)
        object.__setattr__(self, "align_corners", _bool(self.align_corners, what,
                                                        "align_corners"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, what))

    @property
    def spatial(self) -> int:
        return len(self.size) - 2

    @property
    def theta_shape(self) -> Tuple[int, ...]:
        k = self.spatial
        return (self.size[0], k, k + 1)

    @property
    def grid_shape(self) -> Tuple[int, ...]:
        return (self.size[0],) + self.size[2:] + (self.spatial,)


@dataclass
class AffineGridArgs:
    """Forward operands: ``theta`` (``desc.theta_shape``), ``grid`` (``desc.grid_shape``); any
    strides."""

    theta: object
    grid: object


@dataclass
class AffineGridBackwardArgs:
    """Backward operands: ``grad_grid`` (``desc.grid_shape``), ``grad_theta``
    (``desc.theta_shape``); any strides."""

    grad_grid: object
    grad_theta: object


class _AffineBase(Plan):
    """Shared plan / bind / launch of the two affine_grid plans (``_backward`` picks the
    direction knob and the launch shape)."""

    _backward = False

    def _plan(self) -> None:
        d = self.desc
        self._e = (d.size[0],) + _vol(d.size[2:])
        self._flags = (1 if d.align_corners else 0, 1 if d.spatial == 3 else 0)
        self._n = d.size[0] * d.spatial if self._backward else prod(d.grid_shape[:-1])
        blocks = self._n if self._backward else -(-self._n // spec.THREADS)
        if blocks > _MAX_GRID:
            raise UnsupportedError("affine_grid: the problem exceeds the grid limit")
        self._knobs = AffineGridKnobs(d.dtype.short, "bw" if self._backward else "fw")
        self._grid = (blocks, 1, 1)
        ct = float64 if d.dtype is float64 else float32
        self._sku = KernelSku(OpCategory.IMAGE,
                              "affine_grid" + ("_backward" if self._backward else ""), d.dtype,
                              self._arch, BackendKind.CUTE_DSL,
                              PrecisionGuarantee(math_precision=ct, accumulator=ct),
                              template=spec.AFFINE_GRID.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        if self._backward:
            g = view_arg(args.grad_grid, "grad_grid", shape=d.grid_shape, dtype=d.dtype)
            t = view_arg(args.grad_theta, "grad_theta", shape=d.theta_shape, dtype=d.dtype,
                         device=g.device)
            check_writable_no_overlap(t, "grad_theta")
        else:
            t = view_arg(args.theta, "theta", shape=d.theta_shape, dtype=d.dtype)
            g = view_arg(args.grid, "grid", shape=d.grid_shape, dtype=d.dtype, device=t.device)
            check_writable_no_overlap(g, "grid")
        return t, g

    def _launch(self, bound, stream: int, ws) -> None:
        t, g = bound
        kern = self._kernel(spec.AFFINE_GRID, self._knobs, t.device)
        kern.launch(self._grid, [t.ptr, g.ptr, self._n, *self._e, *t.strides,
                                 *_grid5(g.strides), *self._flags], stream)


class AffineGridPlan(_AffineBase):
    """affine_grid forward (``AffineGridArgs(theta, grid)``): one thread per grid point."""

    descriptor = AffineGridDescriptor


class AffineGridBackwardPlan(_AffineBase):
    """Gradient of affine_grid (``AffineGridBackwardArgs(grad_grid, grad_theta)``): one CTA per
    (n, theta row), a fixed-order block reduction over the points (deterministic)."""

    descriptor = AffineGridDescriptor
    _backward = True
