"""im2col / col2im — torch.nn.functional.unfold / fold — over 1, 2 or 3 spatial dims, as Plans of
their own (CuTe DSL kernels ``im2col`` / ``col2im``).

Per spatial dim of image extent ``I``, kernel ``K``, dilation ``D``, padding ``P``, stride ``S``
the number of blocks (sliding-window positions) is ``L = (I + 2P − D(K−1) − 1) // S + 1`` (torch's
formula; every ``L`` must be >= 1).  With ``KK = Π K`` and ``LL = Π L``::

    unfold: cols[n, c·KK + κ, λ] = x[n, c, λ·S − P + κ·D]   (0 where that is in the padding)
    fold:   y[n, c, z] = Σ_{(κ, λ) : λ·S − P + κ·D = z} cols[n, c·KK + κ, λ]

where ``κ`` (kernel offset) and ``λ`` (block) run row-major over their per-dim tuples.  torch's
unfold / fold are the 2-D case; 1-D and 3-D follow the same rule.

- :class:`Im2ColPlan` (``Im2ColDescriptor``, ``Im2ColArgs(x, cols)``): x (N, C, *spatial) →
  cols (N, C·KK, LL); one thread per column element, a pure gather (an exact copy);
- :class:`Col2ImPlan` (``Col2ImDescriptor``, ``Col2ImArgs(cols, y)``): cols (N, C·KK, LL) →
  y (N, C, *output_size); one thread per image element summing the entries that map onto it
  in a fixed order (the gather form: deterministic, bit-identical reruns, no atomics, no
  workspace), accumulation in f32 (f64 for f64).

Each is the other's backward (fold is the adjoint of unfold):

- :class:`Im2ColBackwardPlan` (``Im2ColDescriptor``, ``Im2ColBackwardArgs(dcols, dx)``):
  dx = fold(dcols) — the col2im kernel;
- :class:`Col2ImBackwardPlan` (``Col2ImDescriptor``, ``Col2ImBackwardArgs(dy, dcols)``):
  dcols = unfold(dy) — the im2col kernel.

``Im2ColDescriptor.to_col2im()`` / ``Col2ImDescriptor.to_im2col()`` give the matching descriptor
of the other direction.  Operands are batched (an unbatched torch input takes a leading size-1
dim).  Inputs may have any strides (NHWC / channels-last inputs included); outputs may have any
strides under which no two elements overlap (dense row-major is the usual; a channels-last
``y`` / ``dx`` works too).  dtypes f32, f16, bf16, f64; Int64 index math.  An empty problem
(N = 0 or C = 0) launches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...common.spatial import five_strides, spatial_ints, three
from ...dtypes import DType, float32, float64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, check_dtype, check_writable_no_overlap, prod, view_arg
from ...tensor import check_shape
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee
from .conv import CONV_DTYPES
from .specs import im2col as spec
from .specs.im2col import Im2ColKnobs

__all__ = [
    "Im2ColDescriptor", "Col2ImDescriptor", "Im2ColArgs", "Col2ImArgs", "Im2ColBackwardArgs",
    "Col2ImBackwardArgs", "Im2ColPlan", "Col2ImPlan", "Im2ColBackwardPlan", "Col2ImBackwardPlan",
    "unfold_blocks",
]

_MAX_GRID = 2**31 - 1


def unfold_blocks(n: int, k: int, d: int, p: int, s: int) -> int:
    """torch's number of sliding blocks along a dim of extent ``n`` (kernel ``k``, dilation
    ``d``, padding ``p``, stride ``s``); may be <= 0 (the descriptors reject that)."""
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _check_window(desc, what: str, image_sp: Tuple[int, ...]) -> None:
    """Normalise and check spatial, kernel_size / dilation / padding / stride and dtype of
    ``desc`` against the image's spatial extents ``image_sp``."""
    k = desc.spatial
    ks = spatial_ints(desc.kernel_size, k, what, "kernel_size")
    dl = spatial_ints(desc.dilation, k, what, "dilation")
    pd = spatial_ints(desc.padding, k, what, "padding")
    st = spatial_ints(desc.stride, k, what, "stride")
    for name, vals, lo in (("kernel_size", ks, 1), ("dilation", dl, 1), ("padding", pd, 0),
                           ("stride", st, 1)):
        if any(v < lo for v in vals):
            raise InvalidProblemError(f"{what}: {name} must be >= {lo}, got {vals}")
    object.__setattr__(desc, "kernel_size", ks)
    object.__setattr__(desc, "dilation", dl)
    object.__setattr__(desc, "padding", pd)
    object.__setattr__(desc, "stride", st)
    object.__setattr__(desc, "dtype", check_dtype(desc.dtype, CONV_DTYPES, what))
    blocks = tuple(unfold_blocks(*a) for a in zip(image_sp, ks, dl, pd, st))
    if any(b < 1 for b in blocks):
        raise InvalidProblemError(f"{what}: the sliding blocks {blocks} of spatial size "
                                  f"{image_sp} (kernel_size {ks}, dilation {dl}, padding {pd}, "
                                  f"stride {st}) must all be >= 1")


def _check_spatial(spatial, what: str) -> None:
    if isinstance(spatial, bool) or spatial not in (1, 2, 3):
        raise InvalidProblemError(f"{what}: spatial must be 1, 2 or 3, got {spatial!r}")


@dataclass(frozen=True)
class Im2ColDescriptor:
    """unfold of an (N, C, *spatial) image of ``shape`` (``spatial`` = 1, 2 or 3 dims, each >= 1;
    N and C may be 0) with ``kernel_size`` / ``dilation`` / ``padding`` / ``stride`` (an int or
    one per spatial dim; kernel, dilation, stride >= 1, padding >= 0) in ``dtype`` (f32, f16,
    bf16, f64): cols ``out_shape`` = (N, C·Π kernel_size, Π blocks).  Every block count >= 1
    (InvalidProblemError)."""

    spatial: int
    shape: Tuple[int, ...]
    kernel_size: object
    dilation: object = 1
    padding: object = 0
    stride: object = 1
    dtype: DType = float32

    def __post_init__(self):
        what = "Im2Col"
        _check_spatial(self.spatial, what)
        shape = check_shape(self.shape, f"{what}: x")
        if len(shape) != self.spatial + 2:
            raise InvalidProblemError(f"{what}: shape {shape} must be (N, C, *spatial) with "
                                      f"{self.spatial} spatial dims")
        if any(n < 1 for n in shape[2:]):
            raise InvalidProblemError(f"{what}: spatial extents must be >= 1, got {shape[2:]}")
        object.__setattr__(self, "shape", shape)
        _check_window(self, what, shape[2:])

    @property
    def blocks(self) -> Tuple[int, ...]:
        """The number of sliding blocks per spatial dim."""
        return tuple(unfold_blocks(*a) for a in zip(self.shape[2:], self.kernel_size,
                                                     self.dilation, self.padding, self.stride))

    @property
    def image_shape(self) -> Tuple[int, ...]:
        return self.shape

    @property
    def cols_shape(self) -> Tuple[int, ...]:
        return (self.shape[0], self.shape[1] * prod(self.kernel_size), prod(self.blocks))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.cols_shape

    def to_col2im(self) -> "Col2ImDescriptor":
        """The fold descriptor that maps this unfold's cols back onto its image shape."""
        return Col2ImDescriptor(self.spatial, self.cols_shape, self.shape[2:], self.kernel_size,
                                self.dilation, self.padding, self.stride, self.dtype)


@dataclass(frozen=True)
class Col2ImDescriptor:
    """fold of cols of ``shape`` (N, C·Π kernel_size, L) into an (N, C, *output_size) image
    (``spatial`` = 1, 2 or 3 dims; ``output_size`` an int or one per dim, each >= 1), with
    ``kernel_size`` / ``dilation`` / ``padding`` / ``stride`` as :class:`Im2ColDescriptor`, in
    ``dtype`` (f32, f16, bf16, f64).  torch's rules (InvalidProblemError): dim 1 divisible by
    Π kernel_size, L equal to the number of blocks of ``output_size``; N and C may be 0."""

    spatial: int
    shape: Tuple[int, ...]
    output_size: object
    kernel_size: object
    dilation: object = 1
    padding: object = 0
    stride: object = 1
    dtype: DType = float32

    def __post_init__(self):
        what = "Col2Im"
        _check_spatial(self.spatial, what)
        shape = check_shape(self.shape, f"{what}: cols")
        if len(shape) != 3:
            raise InvalidProblemError(f"{what}: shape {shape} must be (N, C·prod(kernel_size), L)")
        object.__setattr__(self, "shape", shape)
        os_ = spatial_ints(self.output_size, self.spatial, what, "output_size")
        if any(o < 1 for o in os_):
            raise InvalidProblemError(f"{what}: output_size must be >= 1, got {os_}")
        object.__setattr__(self, "output_size", os_)
        _check_window(self, what, os_)
        kk = prod(self.kernel_size)
        if shape[1] % kk:
            raise InvalidProblemError(f"{what}: dim 1 of cols ({shape[1]}) must be divisible by "
                                      f"the product of kernel_size {self.kernel_size} ({kk})")
        if shape[2] != prod(self.blocks):
            raise InvalidProblemError(f"{what}: dim 2 of cols ({shape[2]}) must equal the number "
                                      f"of sliding blocks {self.blocks} = {prod(self.blocks)}")

    @property
    def blocks(self) -> Tuple[int, ...]:
        """The number of sliding blocks per spatial dim."""
        return tuple(unfold_blocks(*a) for a in zip(self.output_size, self.kernel_size,
                                                     self.dilation, self.padding, self.stride))

    @property
    def image_shape(self) -> Tuple[int, ...]:
        return (self.shape[0], self.shape[1] // prod(self.kernel_size)) + self.output_size

    @property
    def cols_shape(self) -> Tuple[int, ...]:
        return self.shape

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return self.image_shape

    def to_im2col(self) -> Im2ColDescriptor:
        """The unfold descriptor whose cols this fold takes."""
        return Im2ColDescriptor(self.spatial, self.image_shape, self.kernel_size, self.dilation,
                                self.padding, self.stride, self.dtype)


@dataclass
class Im2ColArgs:
    """unfold operands: ``x`` (``desc.shape``, any strides), ``cols`` (``desc.out_shape``)."""

    x: object
    cols: object


@dataclass
class Col2ImArgs:
    """fold operands: ``cols`` (``desc.shape``, any strides), ``y`` (``desc.out_shape``)."""

    cols: object
    y: object


@dataclass
class Im2ColBackwardArgs:
    """unfold's backward operands: ``dcols`` (``desc.out_shape``, any strides), ``dx``
    (``desc.shape``)."""

    dcols: object
    dx: object


@dataclass
class Col2ImBackwardArgs:
    """fold's backward operands: ``dy`` (``desc.out_shape``, any strides), ``dcols``
    (``desc.shape``)."""

    dy: object
    dcols: object


def _check_output(v, name: str):
    """An output must not have two elements at one address: zero strides (broadcast) are
    InvalidProblemError; strides that may interleave (not nested once sorted) UnsupportedError."""
    check_writable_no_overlap(v, name)
    dims = sorted((abs(int(s)), int(n)) for n, s in zip(v.shape, v.strides) if n > 1)
    span = 1
    for s, n in dims:
        if s < span:
            raise UnsupportedError(f"{name}: strides {tuple(v.strides)} of shape "
                                   f"{tuple(v.shape)} may overlap; give a dense output")
        span = s * n
    return v


class _UnfoldBase(Plan):
    """Shared plan / bind / launch of the four unfold / fold plans: ``_gather`` True runs the
    im2col kernel (image → cols), False the col2im kernel (cols → image); ``_op`` names the
    SKU's op; ``_fields`` the Args' (input, output) field names."""

    _gather = True
    _op = "im2col"
    _fields = ("x", "cols")

    def _plan(self) -> None:
        d = self.desc
        img, cols = d.image_shape, d.cols_shape
        blocks = d.blocks
        self._img, self._cols = img, cols
        self._e = (img[1],) + three(img[2:], 1) + three(blocks, 1) + (0,)
        self._k = three(d.kernel_size, 1) + three(d.stride, 1) + (0, 0)
        self._q = three(d.padding, 0) + three(d.dilation, 1) + (0, 0)
        self._n = prod(cols) if self._gather else prod(img)
        if -(-self._n // spec.THREADS) > _MAX_GRID:
            raise UnsupportedError(f"{self._op}: {self._n} elements exceed the grid limit")
        self._knobs = Im2ColKnobs(d.dtype.short)
        self._template = spec.IM2COL if self._gather else spec.COL2IM
        ct = float64 if d.dtype is float64 else float32
        pg = (PrecisionGuarantee(math_precision=d.dtype, accumulator=d.dtype) if self._gather
              else PrecisionGuarantee(math_precision=ct, accumulator=ct))
        self._sku = KernelSku(OpCategory.CONV, self._op, d.dtype, self._arch, BackendKind.CUTE_DSL,
                              pg, template=self._template.name, knobs=freeze_knobs(self._knobs))

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        fi, fo = self._fields
        ins, outs = (self._img, self._cols) if self._gather else (self._cols, self._img)
        a = view_arg(getattr(args, fi), fi, shape=ins, dtype=d.dtype)
        b = _check_output(view_arg(getattr(args, fo), fo, shape=outs, dtype=d.dtype,
                                   device=a.device), fo)
        return a, b

    def _launch(self, bound, stream: int, ws) -> None:
        a, b = bound
        img, cols = (a, b) if self._gather else (b, a)
        kern = self._kernel(self._template, self._knobs, b.device)
        grid = (-(-self._n // spec.THREADS), 1, 1)
        strides = five_strides(img.strides) + tuple(int(s) for s in cols.strides)
        kern.launch(grid, [a.ptr, b.ptr, self._n, *self._e, *self._k, *self._q, *strides], stream)


class Im2ColPlan(_UnfoldBase):
    """unfold (``Im2ColArgs(x, cols)``): one thread per column element, an exact gather copy (0
    for padding taps); its backward is :class:`Im2ColBackwardPlan` (= fold)."""

    descriptor = Im2ColDescriptor


class Im2ColBackwardPlan(_UnfoldBase):
    """Gradient of unfold (``Im2ColBackwardArgs(dcols, dx)``): dx = fold(dcols), the col2im
    kernel — gather form, fixed order, deterministic, no atomics; f32 (f64) accumulation."""

    descriptor = Im2ColDescriptor
    _gather = False
    _op = "im2col_backward"
    _fields = ("dcols", "dx")


class Col2ImPlan(_UnfoldBase):
    """fold (``Col2ImArgs(cols, y)``): one thread per image element summing, in a fixed order,
    the column entries that map onto it (deterministic, no atomics, no workspace); f32 (f64)
    accumulation.  Its backward is :class:`Col2ImBackwardPlan` (= unfold)."""

    descriptor = Col2ImDescriptor
    _gather = False
    _op = "col2im"
    _fields = ("cols", "y")


class Col2ImBackwardPlan(_UnfoldBase):
    """Gradient of fold (``Col2ImBackwardArgs(dy, dcols)``): dcols = unfold(dy), the im2col
    kernel (an exact gather copy)."""

    descriptor = Col2ImDescriptor
    _op = "col2im_backward"
    _fields = ("dy", "dcols")
