"""The ``Array`` object: a strided view (pointer, shape, strides in elements, dtype, device) of
device memory owned by a stream-ordered pool buffer or by a DLPack producer (torch, cupy, ...).

Views (basic indexing, ``.T``/``.mT``, ``permute_dims``, ``reshape`` of dense arrays, ...) share the
owner.  Operators follow the standard (2024.12): every arithmetic, bitwise and comparison operator
with its reflected and in-place forms, built on the elementwise functions (``x + 1`` is
``add(x, 1)``, ``2 - x`` is ``subtract(2, x)``); operands are Arrays or Python scalars (other
types: ``NotImplemented``); in-place forms write into the array itself (views see the result) and
require the result dtype and broadcast shape to be the array's own.  ``@`` / ``@=`` are
:func:`array_api.matmul` (``_linear_algebra_functions``).

The functions behind the operators, advanced indexing, assignment and dense copies live in the
function modules, which import this one: the methods reach them through :data:`OPERATIONS`, a
table the package (``array_api/__init__``) fills once every module is imported.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from baracuda_dsl.dtypes import to_typestr
from baracuda_dsl.errors import InvalidProblemError, UnsupportedError
from baracuda_dsl.tensor import MAX_RANK, TensorView, contiguous_strides

from . import _device as _dev
from . import _dtypes as _dt
from ._device import Device
from ._dlpack import export, export_host


class Operations:
    """The functions the Array methods hand work to (they live in higher layers), bound once by
    :meth:`bind`: ``namespace`` (the ``array_api`` module, for ``__array_namespace__``),
    ``binary(op, x1, x2, inplace=False)`` and the unary functions ``abs negative positive
    bitwise_invert`` (the operators), ``matmul`` / ``imatmul`` (``@``, ``@=``),
    ``advanced_getitem(x, key)`` and ``setitem(x, key, value)`` (integer-array / boolean-mask
    reads, every assignment), ``contiguous_copy(x)`` (a dense copy)."""

    __slots__ = ("namespace", "binary", "abs", "negative", "positive", "bitwise_invert",
                 "matmul", "imatmul", "advanced_getitem", "setitem", "contiguous_copy")

    def bind(self, **functions) -> None:
        """Set every slot (TypeError when one is missing or unknown)."""
        if set(functions) != set(self.__slots__):
            raise TypeError(f"Operations.bind: expected {sorted(self.__slots__)}, got "
                            f"{sorted(functions)}")
        for name, fn in functions.items():
            setattr(self, name, fn)


#: the late-bound table behind the Array methods (filled by ``array_api/__init__``)
OPERATIONS = Operations()


class Array:
    """A device array.  ``shape``/``ndim``/``size``/``dtype``/``device``; ``x[...]`` basic indexing
    (ints, slices with any step, ``...``, ``None``) returns views; ``to_numpy()`` copies to host;
    DLPack export via ``__dlpack__``; plans accept Arrays (``__baracuda_view__``); operators per
    the standard (``+ - * / // % ** & | ^ << >> ~ == != < <= > >=``, reflected and in-place)."""

    __slots__ = ("_ptr", "_shape", "_strides", "_dtype", "_device", "_owner", "__weakref__")
    __hash__ = None  # __eq__ is elementwise
    __array_ufunc__ = None  # numpy operands defer to (and are refused by) these operators

    def __init__(self, *args, **kwargs):
        raise TypeError("use array_api.asarray / empty / zeros / from_dlpack to create arrays")

    @classmethod
    def _new(cls, ptr: int, shape, strides, dtype, device: Device, owner) -> "Array":
        if len(shape) > MAX_RANK:
            raise InvalidProblemError(f"rank {len(shape)} > {MAX_RANK} is not supported")
        self = object.__new__(cls)
        self._ptr = int(ptr)
        self._shape = tuple(int(s) for s in shape)
        self._strides = tuple(int(s) for s in strides)
        self._dtype = dtype
        self._device = device
        self._owner = owner
        return self

    @classmethod
    def _trusted(cls, ptr: int, shape: tuple, strides: tuple, dtype, device: Device,
                 owner) -> "Array":
        """``_new`` for metadata that is already valid (launch-record replays)."""
        self = object.__new__(cls)
        self._ptr = ptr
        self._shape = shape
        self._strides = strides
        self._dtype = dtype
        self._device = device
        self._owner = owner
        return self

    @classmethod
    def _empty(cls, shape, dtype, device: Device) -> "Array":
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        n = 1
        for s in shape:
            n *= s
        ptr, buf = _dev.allocate(n * dtype.itemsize, device)
        return cls._new(ptr, shape, contiguous_strides(shape), dtype, device, buf)

    def _view(self, offset: int, shape, strides) -> "Array":
        return Array._new(self._ptr + offset * self._dtype.itemsize, shape, strides, self._dtype,
                          self._device, self._owner)

    # ----------------------------------------------------------------------- attributes
    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    @property
    def strides(self):
        """Strides in elements (not part of the standard; useful for interop)."""
        return self._strides

    @property
    def T(self) -> "Array":
        if self.ndim != 2:
            raise ValueError("x.T requires a 2-D array (use permute_dims or mT)")
        return self._view(0, self._shape[::-1], self._strides[::-1])

    @property
    def mT(self) -> "Array":
        if self.ndim < 2:
            raise ValueError("x.mT requires at least 2 dims")
        return self._view(0, self._shape[:-2] + self._shape[-2:][::-1],
                          self._strides[:-2] + self._strides[-2:][::-1])

    def is_contiguous(self) -> bool:
        """Dense row-major (empty arrays count as dense)."""
        return self.size == 0 or self.__baracuda_view__().is_contiguous()

    # ----------------------------------------------------------------------- protocols
    def __array_namespace__(self, /, *, api_version=None):
        if api_version not in (None, "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"unsupported array API version {api_version!r}")
        return OPERATIONS.namespace

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3, so CuPy / Numba / ... take the array zero-copy: ``shape``;
        ``typestr`` (numpy's: ``'<f4'``, ``'|b1'``, ...); ``data = (ptr, False)``, ``ptr`` the
        address of the first element (view offset included; 0 for an empty array, as the spec
        asks); ``strides`` in bytes, or None when C-contiguous; ``version`` 3; ``stream``: the calling
        thread's current stream (1, the legacy default stream, unless ``use_stream`` set
        another): namespace operations are ordered on it, so a consumer that synchronizes with
        it, as v3 requires, sees the pending writes).  bfloat16 / float8 have
        no typestr: for them the attribute does not exist (AttributeError, ``hasattr`` is False)
        and DLPack (``__dlpack__``) is the way to share them."""
        typestr = to_typestr(self._dtype)
        if typestr is None:
            raise AttributeError(f"{self._dtype.name} has no __cuda_array_interface__ typestr; "
                                 f"use DLPack (__dlpack__ / from_dlpack) to share it")
        empty = self.size == 0
        isz = self._dtype.itemsize
        strides = None if self.is_contiguous() else tuple(s * isz for s in self._strides)
        return {"shape": self._shape, "typestr": typestr, "version": 3,
                "stream": _dev.current_stream() or 1,
                "data": (0 if empty else self._ptr, False), "strides": strides}

    def __baracuda_view__(self) -> TensorView:
        return TensorView(self._ptr, self._shape, self._strides, self._dtype,
                          self._device.ordinal, None, self)

    def __dlpack_device__(self):
        return (2, self._device.ordinal)  # kDLCUDA

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export (zero copy unless ``copy=True``).  ``stream``: the consumer's stream; work
        this namespace enqueued on the legacy default stream is made visible to it."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if int(dl_device[0]) == 1:  # kDLCPU: a host copy (np.from_dlpack(x, device="cpu"))
                return export_host(self, max_version is not None and int(max_version[0]) >= 1,
                                   copy)
            raise BufferError(f"cannot export to DLPack device {tuple(dl_device)}; array is on "
                              f"{self.__dlpack_device__()}")
        if isinstance(stream, int) and stream not in (-1, 0, 1):
            _dev.stream_wait_default(stream)
        src = OPERATIONS.contiguous_copy(self) if copy else self
        versioned = max_version is not None and int(max_version[0]) >= 1
        return export(src._ptr, src._shape, src._strides, src._dtype, src._device.ordinal, src,
                      versioned, bool(copy))

    # ----------------------------------------------------------------------- host copies
    def to_numpy(self, *, raw: bool = False) -> np.ndarray:
        """Host copy (numpy).  bfloat16 comes back as float32 (exact) unless ml_dtypes is
        installed; ``raw=True`` returns the stored bits (uint16 for bf16, uint8 for fp8)."""
        raw_dt = self._dtype.to_numpy()
        n = self.size
        if n == 0:
            out = np.empty(self._shape, raw_dt)
        elif self.is_contiguous():
            out = np.empty(self._shape, raw_dt)
            _dev.dtoh(out, self._ptr)
        else:
            v = self.__baracuda_view__()
            lo, hi = v.span_elements()
            span = hi - lo + 1
            if span <= 4 * n + (1 << 20) // self._dtype.itemsize:
                host = np.empty(span, raw_dt)
                _dev.dtoh(host, self._ptr + lo * self._dtype.itemsize)
                isz = self._dtype.itemsize
                out = np.lib.stride_tricks.as_strided(
                    host[-lo:], self._shape, tuple(s * isz for s in self._strides)).copy()
            else:
                return OPERATIONS.contiguous_copy(self).to_numpy(raw=raw)
        return out if raw else _dt.host_decode(out, self._dtype)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a device Array cannot be viewed as a host array without a copy")
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype)

    def to_device(self, device, /, *, stream=None) -> "Array":
        dev = _dev.as_device(device)
        if dev == self._device:
            return self
        raise UnsupportedError(f"to_device({dev}): cross-device copies are not wired (array is "
                               f"on {self._device})")

    def _scalar(self):
        if self.size != 1 or self.ndim != 0:
            raise TypeError(f"only 0-D arrays convert to Python scalars (shape {self._shape})")
        return self.to_numpy()[()]

    def __bool__(self):
        return bool(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __float__(self):
        return float(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def __index__(self):
        if not _dt.isdtype(self._dtype, "integral"):
            raise TypeError("only integer arrays can be used as an index")
        return operator.index(int(self._scalar()))

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-D array")
        return self._shape[0]

    def __repr__(self):
        try:
            body = np.array2string(self.to_numpy(), separator=", ", threshold=100)
        except Exception as e:  # pragma: no cover - e.g. no driver
            body = f"<{type(e).__name__}>"
        return f"Array({body}, dtype={self._dtype.name}, device={self._device})"

    # ----------------------------------------------------------------------- indexing
    def _index(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n_ell = sum(1 for k in key if k is Ellipsis)
        if n_ell > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if n_real > self.ndim:
            raise IndexError(f"too many indices for a {self.ndim}-D array")
        if n_ell == 0:
            key = key + (Ellipsis,)
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (self.ndim - n_real) + key[i + 1:]
        off, shape, strides, d = 0, [], [], 0
        for k in key:
            if k is None:
                shape.append(1)
                strides.append(0)
                continue
            n, s = self._shape[d], self._strides[d]
            d += 1
            if isinstance(k, Array):
                if not _dt.isdtype(k.dtype, "integral"):
                    raise IndexError(f"arrays used as indices must have an integer or boolean "
                                     f"dtype, got {k.dtype.name}")
                k = int(k)
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                m = len(range(start, stop, step))
                if m:
                    off += start * s
                shape.append(m)
                strides.append(s * step)
                continue
            try:
                k = operator.index(k)
            except TypeError:
                raise IndexError(f"unsupported index {k!r}") from None
            if k < 0:
                k += n
            if not 0 <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {d - 1} with size {n}")
            off += k * s
        if len(shape) > MAX_RANK:
            raise InvalidProblemError(f"indexing would give rank {len(shape)} > {MAX_RANK}")
        return off, tuple(shape), tuple(strides)

    def __getitem__(self, key) -> "Array":
        """Basic indexing (ints, slices, ``...``, ``None``, 0-D integer arrays) gives a view;
        integer arrays and boolean masks give a new array (``_indexing_functions``)."""
        if is_advanced(key):
            return OPERATIONS.advanced_getitem(self, key)
        off, shape, strides = self._index(key)
        return self._view(off, shape, strides)

    def __setitem__(self, key, value, /) -> None:
        """``x[key] = value``: ``value`` a Python scalar (its kind must fit x's dtype: TypeError,
        OverflowError for out-of-range ints) or an Array whose dtype promotes to x's dtype
        (``can_cast``; TypeError otherwise), broadcast to the indexed view and converted; numpy
        arrays / nested lists are converted to x's dtype on the host (extension).  Strided views
        are written in place.  Integer-array / boolean-mask keys scatter (``_indexing_functions``;
        duplicate targets: one write wins)."""
        OPERATIONS.setitem(self, key, value)

    # ----------------------------------------------------------------------- matmul
    def __matmul__(self, other, /):
        """``self @ other``: :func:`array_api.matmul` (Arrays only)."""
        if not isinstance(other, Array):
            return NotImplemented
        return OPERATIONS.matmul(self, other)

    def __rmatmul__(self, other, /):
        """``other @ self``: :func:`array_api.matmul` (Arrays only)."""
        if not isinstance(other, Array):
            return NotImplemented
        return OPERATIONS.matmul(other, self)

    def __imatmul__(self, other, /):
        """``self @= other``: matmul written into self (same dtype and shape required)."""
        if not isinstance(other, Array):
            return NotImplemented
        return OPERATIONS.imatmul(self, other)


# --------------------------------------------------------------------------- helpers
def tensor_view(x: Array) -> TensorView:
    """The TensorView a plan's Args take, built without re-validation (an Array's fields are
    checked when it is made); ``x.__baracuda_view__()`` is the validating form."""
    return TensorView._trusted(x._ptr, x._shape, x._strides, x._dtype, x._device.ordinal, x)


def is_advanced(key) -> builtins.bool:
    """True when ``key`` needs the advanced path (an integer array of rank >= 1, any boolean
    array or Python / numpy bool)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, (builtins.bool, np.bool_)):
            return True
        if isinstance(k, Array) and (k.ndim > 0 or k.dtype == _dt.bool):
            return True
    return False


# --------------------------------------------------------------------------- operators
_PY_SCALARS = (builtins.bool, int, float, complex)


def _operand_ok(other) -> builtins.bool:
    return isinstance(other, Array) or type(other) in _PY_SCALARS


def _binary_operator(fname: str, symbol: str, form: str):
    """The ``form`` (``''``, ``'r'`` reflected, ``'i'`` in place) operator method of binary
    elementwise function ``fname``."""
    def method(self, other, /):
        if not _operand_ok(other):
            return NotImplemented
        if form == "r":
            return OPERATIONS.binary(fname, other, self)
        if form == "i":
            OPERATIONS.binary(fname, self, other, inplace=True)
            return self
        return OPERATIONS.binary(fname, self, other)

    lhs, rhs = ("other", "self") if form == "r" else ("self", "other")
    eq = "=" if form == "i" else ""
    method.__doc__ = (f"``{lhs} {symbol}{eq} {rhs}``: :func:`array_api.{fname}`"
                      + (" written into self (same dtype and shape required)" if eq else ""))
    return method


def _unary_operator(fname: str, symbol: str):
    def method(self, /):
        return getattr(OPERATIONS, fname)(self)

    method.__doc__ = f"``{symbol}self``: :func:`array_api.{fname}`"
    return method


#: (dunder stem, function, symbol); arithmetic and bitwise ones have reflected / in-place forms
_ARITHMETIC = (("add", "add", "+"), ("sub", "subtract", "-"), ("mul", "multiply", "*"),
               ("truediv", "divide", "/"), ("floordiv", "floor_divide", "//"),
               ("mod", "remainder", "%"), ("pow", "pow", "**"), ("and", "bitwise_and", "&"),
               ("or", "bitwise_or", "|"), ("xor", "bitwise_xor", "^"),
               ("lshift", "bitwise_left_shift", "<<"), ("rshift", "bitwise_right_shift", ">>"))
_COMPARISON = (("eq", "equal", "=="), ("ne", "not_equal", "!="), ("lt", "less", "<"),
               ("le", "less_equal", "<="), ("gt", "greater", ">"), ("ge", "greater_equal", ">="))
_UNARY = (("abs", "abs", "abs "), ("neg", "negative", "-"), ("pos", "positive", "+"),
          ("invert", "bitwise_invert", "~"))


def _install_operators() -> None:
    for stem, fname, sym in _ARITHMETIC:
        for form in ("", "r", "i"):
            m = _binary_operator(fname, sym, form)
            m.__name__ = f"__{form}{stem}__"
            m.__qualname__ = f"Array.{m.__name__}"
            setattr(Array, m.__name__, m)
    for stem, fname, sym in _COMPARISON:
        m = _binary_operator(fname, sym, "")
        m.__name__ = f"__{stem}__"
        m.__qualname__ = f"Array.{m.__name__}"
        setattr(Array, m.__name__, m)
    for stem, fname, sym in _UNARY:
        m = _unary_operator(fname, sym)
        m.__name__ = f"__{stem}__"
        m.__qualname__ = f"Array.{m.__name__}"
        setattr(Array, m.__name__, m)


_install_operators()
