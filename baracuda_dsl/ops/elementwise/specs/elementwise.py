"""Template spec of the elementwise kernels: one CuTe DSL template for every unary, binary and
ternary op, forward and backward, and every cast — an op table of formulas, not a kernel per op.

An op is an :class:`OpSpec`: how many inputs and outputs, which value dtypes it is wired for, the
dtype of each input and output for a given value dtype, and how many float parameters it takes.
A SKU is ``(op, dtype[, out], path)``:

``op``      a name of :data:`OPS` (``add``, ``gelu``, ``gelu_bw``, ``cast`` ...)
``dtype``   the value dtype (short name: ``f32 bf16 i64 c64 bool`` ...); ``cast`` also has ``out``
``path``    ``flat``: every array operand dense and 16-byte aligned, same element count —
            128-bit vector loads/stores, ``ILP`` vectors in flight per thread;
            ``s4``:   strided (any strides incl. 0 = broadcast, negative), collapsed rank ≤ 4,
            numel and every offset < 2³¹ (Int32 index math);
            ``v4``:   as s4, but every array operand has innermost stride 1 or 0 and the
            innermost extent is a multiple of the vector width: one index decomposition and
            one 16-byte access per vector (bias-style broadcasts); :data:`V4_OPS` only;
            ``s8``:   ``copy`` only: strided, rank ≤ 8, Int64 index math (≥ 2³¹ elements)

Every operand may instead be a scalar passed by value (bit ``k`` of ``smask``), so ``x + 2.0``,
``where(c, x, 0)`` and ``clip(x, 0, 6)`` read nothing but ``x``.  Half types (f16, bf16) and fp8
compute in f32, f64 in f64, integers in their own width (wrapping), complex as (re, im) pairs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional, Tuple

from ....jit import KernelTemplate, LaunchGeometry, Param, params, register

THREADS = 256
ILP = 4  # flat: 16-byte vectors per thread; strided: elements per thread
PATHS = ("flat", "s4")  # every op; ``s8`` only for ``copy`` (see _space)

# --------------------------------------------------------------------------- dtype groups
SINT = ("i8", "i16", "i32", "i64")
UINT = ("u8", "u16", "u32", "u64")
INT = SINT + UINT
FLOAT = ("f16", "bf16", "f32", "f64")
CPLX = ("c64", "c128")
FP8 = ("fp8e4m3", "fp8e5m2")
REAL = INT + FLOAT
NUM = REAL + CPLX
ALL = ("bool",) + NUM
INTB = ("bool",) + INT
FLOATC = FLOAT + CPLX

ITEMSIZE = {"bool": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4,
            "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
            "fp8e4m3": 1, "fp8e5m2": 1}
REAL_OF = {"c64": "f32", "c128": "f64"}


@dataclass(frozen=True)
class OpSpec:
    """One elementwise op.

    ``nin``/``nout``  inputs / outputs (≤ 4 / ≤ 3)
    ``dtypes``        value dtypes it is wired for
    ``out``           output dtype rule: ``same``, ``bool``, ``real`` (complex → its real type)
    ``nparams``       float parameters (``p0..p2``)
    ``ins``           per-input dtype rule: ``v`` (value dtype) or ``bool`` (where's condition)
    ``grad``          name of the backward op (None: not differentiable here)
    """

    name: str
    nin: int
    dtypes: Tuple[str, ...]
    out: str = "same"
    nout: int = 1
    nparams: int = 0
    ins: Optional[Tuple[str, ...]] = None
    grad: Optional[str] = None

    def in_dtypes(self, dtype: str) -> Tuple[str, ...]:
        rules = self.ins or ("v",) * self.nin
        return tuple(dtype if r == "v" else r for r in rules)

    def out_dtypes(self, dtype: str, out: Optional[str] = None) -> Tuple[str, ...]:
        if out is not None:
            return (out,) * self.nout
        if self.out == "bool":
            return ("bool",) * self.nout
        if self.out == "real":
            return (REAL_OF.get(dtype, dtype),) * self.nout
        return (dtype,) * self.nout


OPS: dict = {}


def _op(name, nin, dtypes, **kw) -> None:
    OPS[name] = OpSpec(name, nin, tuple(dtypes), **kw)


# ---------------------------------------------------------------- forward: the standard's ops
_CPLX_UNARY = ("exp", "log", "sqrt", "square", "reciprocal", "sign", "negative", "conj", "acos",
               "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan",
               "tanh", "expm1", "log1p", "log2", "log10")
for _n in ("acos acosh asin asinh atan atanh cos cosh exp expm1 log log1p log2 log10 sin sinh "
           "sqrt tan tanh").split():
    _op(_n, 1, FLOATC if _n in _CPLX_UNARY else FLOAT, grad=f"{_n}_bw")
for _n in ("ceil", "floor", "trunc", "round"):
    _op(_n, 1, FLOAT, grad=f"{_n}_bw")
_op("signbit", 1, FLOAT, out="bool")
_op("abs", 1, NUM, out="real", grad="abs_bw")
_op("negative", 1, NUM, grad="negative_bw")
_op("square", 1, NUM, grad="square_bw")
_op("sign", 1, NUM, grad="sign_bw")
_op("reciprocal", 1, FLOATC, grad="reciprocal_bw")
_op("conj", 1, CPLX)
_op("real", 1, CPLX, out="real")
_op("imag", 1, CPLX, out="real")
for _n in ("isfinite", "isinf", "isnan"):
    _op(_n, 1, NUM, out="bool")
_op("bitwise_invert", 1, INTB)
_op("logical_not", 1, ("bool",))
_op("copy", 1, ALL + FP8)

for _n in ("add", "subtract", "multiply"):
    _op(_n, 2, NUM, grad=f"{_n}_bw")
_op("divide", 2, FLOATC, grad="divide_bw")
_op("pow", 2, NUM, grad="pow_bw")
for _n in ("atan2", "hypot", "logaddexp", "copysign"):
    _op(_n, 2, FLOAT, grad=f"{_n}_bw")
_op("nextafter", 2, FLOAT)
for _n in ("maximum", "minimum"):
    _op(_n, 2, REAL, grad=f"{_n}_bw")
_op("floor_divide", 2, REAL, grad="floor_divide_bw")
_op("remainder", 2, REAL, grad="remainder_bw")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _op(_n, 2, INTB)
for _n in ("bitwise_left_shift", "bitwise_right_shift"):
    _op(_n, 2, INT)
for _n in ("equal", "not_equal"):
    _op(_n, 2, ALL, out="bool")
for _n in ("greater", "greater_equal", "less", "less_equal"):
    _op(_n, 2, REAL, out="bool")
for _n in ("logical_and", "logical_or", "logical_xor"):
    _op(_n, 2, ("bool",))
_op("clip", 3, REAL, grad="clip_bw")
_op("where", 3, ALL, ins=("bool", "v", "v"), grad="where_bw")

# ------------------------------------------------------------------------- ML extensions
_ML_UNARY = {  # name -> float params
    "relu": 0, "gelu": 0, "gelu_tanh": 0, "silu": 0, "mish": 0, "sigmoid": 0, "softplus": 2,
    "hardswish": 0, "hardsigmoid": 0, "hardtanh": 2, "elu": 1, "selu": 0, "leaky_relu": 1,
    "relu6": 0, "logit": 1, "erf": 0, "erfc": 0, "erfinv": 0, "lgamma": 0, "digamma": 0,
    "softsign": 0, "tanhshrink": 0, "hardshrink": 1, "softshrink": 1, "threshold": 2,
}
for _n, _p in _ML_UNARY.items():
    _op(_n, 1, FLOAT, nparams=_p, grad=f"{_n}_bw")
_op("trigamma", 1, FLOAT)  # digamma's derivative (polygamma(1, x))
for _n in ("prelu", "glu", "reglu", "swiglu", "geglu"):
    _op(_n, 2, FLOAT, grad=f"{_n}_bw")
_op("lerp", 3, FLOAT, grad="lerp_bw")
_op("addcmul", 3, FLOAT, nparams=1, grad="addcmul_bw")
_op("addcdiv", 3, FLOAT, nparams=1, grad="addcdiv_bw")
_op("fma", 3, FLOAT, grad="fma_bw")
_op("affine", 1, FLOAT, nparams=2, grad="affine_bw")  # alpha·x + beta

# ------------------------------------------------------------------------------ casts
CAST_DTYPES = ALL + FP8
_op("cast", 1, CAST_DTYPES)


def cast_pairs():
    """Every (in, out) dtype pair of the cast op (in != out)."""
    for a in CAST_DTYPES:
        for b in CAST_DTYPES:
            if a != b:
                yield a, b


# ------------------------------------------------------------------------------ backward
# unary: (dy, x) -> dx ; binary: (dy, a, b) -> (da, db) ; ternary: (dy, a, b, c) -> 3 grads
for _s in list(OPS.values()):
    if _s.grad is None:
        continue
    if _s.name == "where":
        _op("where_bw", 2, FLOAT, ins=("v", "bool"), nout=2)
        continue
    _op(_s.grad, _s.nin + 1, tuple(d for d in _s.dtypes if d in FLOAT), nout=_s.nin,
        nparams=_s.nparams)


def backward_of(name: str) -> Optional[OpSpec]:
    g = OPS[name].grad
    return None if g is None else OPS[g]


# ------------------------------------------------------------------------ the template
@dataclass(frozen=True)
class ElementwiseKnobs:
    """One SKU of the elementwise template: ``op`` (a name of :data:`OPS`), the value ``dtype``
    (short name), the kernel ``path`` (``flat``, ``s4``, ``v4``, ``s8``: see the module
    docstring) and, for casts only, the ``out`` dtype (None: the op's own output rule)."""

    op: str
    dtype: str
    path: str
    out: Optional[str] = None

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    @property
    def in_dtypes(self) -> Tuple[str, ...]:
        return self.spec.in_dtypes(self.dtype)

    @property
    def out_dtypes(self) -> Tuple[str, ...]:
        return self.spec.out_dtypes(self.dtype, self.out)


def vec_width(knobs: ElementwiseKnobs) -> int:
    """Elements per 16-byte vector on the flat path: 16 / the widest operand's itemsize."""
    return max(1, 16 // max(ITEMSIZE[d] for d in knobs.in_dtypes + knobs.out_dtypes))


#: ops that also get the ``v4`` path (floating dtypes): the ones commonly broadcast along the
#: innermost dim (bias adds, scales, masks, gated units)
V4_OPS = frozenset(("add", "subtract", "multiply", "divide", "maximum", "minimum", "where",
                    "prelu", "fma", "addcmul", "lerp", "copy", "add_bw", "multiply_bw"))


def paths_of(op: str, dtype: Optional[str] = None) -> Tuple[str, ...]:
    """Paths an op is built for: flat and s4 for all; ``copy`` also s8, the fallback that writes
    any strided (rank ≤ 8, ≥ 2³¹ elements) output: other ops run such problems on dense
    temporaries (StridedCopy in, flat op, copy out).  ``v4`` (strided, 16-byte vectors along a
    unit- or zero-stride innermost dim) for the :data:`V4_OPS` on floating dtypes."""
    p = PATHS + ("s8",) if op == "copy" else PATHS
    if op in V4_OPS and (dtype is None or dtype in FLOAT):
        p = p + ("v4",)
    return p


def _space():
    for spec in OPS.values():
        if spec.name == "cast":
            for path in PATHS:
                for a, b in cast_pairs():
                    yield ElementwiseKnobs("cast", a, path, out=b)
            continue
        for dt in spec.dtypes:
            for path in paths_of(spec.name, dt):
                yield ElementwiseKnobs(spec.name, dt, path)


def _arch_ok(knobs: ElementwiseKnobs, arch: str) -> bool:
    # fp8 conversions need the sm89+ cvt instructions
    return not (arch == "sm80" and (knobs.dtype in FP8 or knobs.out in FP8))


# ------------------------------------------------------------------- kernel parameters
#: the kernel's parameters, in ABI order: each is one group of scalars (a tuple in the kernel,
#: one block of the plan's argument list)
GROUPS = ("outputs", "inputs", "size", "scalars", "params", "extents", "strides")
OUTPUTS = ("o0", "o1", "o2")          # output pointer slots
INPUTS = ("a", "b", "c", "d")         # input pointer slots (and scalar-operand slots)
MAX_PARAMS = 3                        # float parameter slots (p0..p2)
STRIDED_RANK = 8                      # extents / strides per operand of the strided paths


@functools.lru_cache(maxsize=None)
def param_groups(knobs: ElementwiseKnobs) -> Tuple[Tuple[Param, ...], ...]:
    """The Params of each kernel parameter group of one SKU, in :data:`GROUPS` order (an empty
    tuple: the SKU does not take that group).

    ``outputs`` / ``inputs``  one pointer per output / input slot (a scalar input's pointer
                              is unused: 0)
    ``size``                  ``n``: the element count
    ``scalars``               ``smask`` (bit k: input k is a scalar passed by value), then per
                              input slot its float / real part ``f``, imaginary part ``g``
                              and integer / bool value ``i`` (:class:`ScalarOperands` order)
    ``params``                the op's float parameters ``p0..``
    ``extents``               the collapsed extents, rank 8 (innermost last, padded with 1)
    ``strides``               8 strides (elements) per output slot, then per input slot

    The strided paths (``s4``, ``v4``, ``s8``) take every slot whatever the op uses (3 outputs,
    4 inputs, 3 parameters, rank 8: 88 parameters).  The ``flat`` path takes only what it
    reads: the op's outputs, inputs and parameters, no extents and no strides.
    """
    spec = knobs.spec
    if knobs.path == "flat":
        outs, ins, npar, rank = OUTPUTS[:spec.nout], INPUTS[:spec.nin], spec.nparams, 0
    else:
        outs, ins, npar, rank = OUTPUTS, INPUTS, MAX_PARAMS, STRIDED_RANK
    return (
        params(" ".join(f"{o}:ptr" for o in outs)),
        params(" ".join(f"{x}:ptr" for x in ins)),
        params("n:i64"),
        params("smask:i32 " + " ".join(f"{part}{x}:{kind}" for part, kind in
                                       (("f", "f64"), ("g", "f64"), ("i", "i64")) for x in ins)),
        params(" ".join(f"p{i}:f64" for i in range(npar))),
        params(" ".join(f"e{i}:i64" for i in range(rank))),
        params(" ".join(f"s{x}{i}:i64" for x in outs + ins for i in range(rank))),
    )


def scalar_slots(knobs: ElementwiseKnobs) -> int:
    """Input slots of the SKU's ``scalars`` group (after ``smask``: f, g, i per slot)."""
    return (len(param_groups(knobs)[GROUPS.index("scalars")]) - 1) // 3


def kernel_params(knobs: ElementwiseKnobs) -> Tuple[Param, ...]:
    """The kernel entry's parameter ABI of one SKU: its :func:`param_groups`, in order."""
    return tuple(p for group in param_groups(knobs) for p in group)


ELEMENTWISE = register(KernelTemplate(
    name="elementwise",
    family="elementwise",
    module="baracuda_dsl.ops.elementwise.kernels.elementwise",
    params=kernel_params,
    space=_space,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=0),
    knobs=ElementwiseKnobs,
    arch_ok=_arch_ok,
))
