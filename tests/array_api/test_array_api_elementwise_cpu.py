"""array_api elementwise functions, Array operators and ML extensions without a GPU.

Arrays are fakes (``Array._new`` over a null pointer, nothing allocated); ``_dispatch.elementwise``
(and ``fill`` / ``copy_into``) are replaced by recorders, so these tests check everything that
happens before a launch: dtype-category validation against array-api-strict (same exception class
for the same dtype combinations), Python-scalar promotion, OverflowError, in-place rules, operator
fallbacks (``NotImplemented``), and the exact (op, operands, in/out dtype, params, out) each call
hands to the dispatcher."""

from __future__ import annotations

import importlib
import math
import sys
import types
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import array_api as xp
from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.tensor import contiguous_strides

strict = pytest.importorskip("array_api_strict")

STD_UNARY = ("abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 "
             "floor imag isfinite isinf isnan log log1p log2 log10 logical_not negative positive "
             "real reciprocal round sign signbit sin sinh square sqrt tan tanh trunc").split()
STD_BINARY = ("add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift "
              "bitwise_xor copysign divide equal floor_divide greater greater_equal hypot less "
              "less_equal logaddexp logical_and logical_or logical_xor maximum minimum multiply "
              "nextafter not_equal pow remainder subtract").split()
STANDARD = STD_UNARY + STD_BINARY + ["clip"]
#: dtypes both namespaces have
COMMON = ("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 "
          "complex128").split()


def fake(shape=(2, 3), dtype=xp.float32, strides=None, ptr=1 << 20):
    shape = tuple(shape)
    return xp.Array._new(ptr, shape, contiguous_strides(shape) if strides is None else strides,
                         dtype, xp.Device(0), None)


@dataclass
class Call:
    op: str
    operands: list
    in_dtype: object
    out_dtype: object
    params: tuple
    out: object


@pytest.fixture
def rec(monkeypatch):
    """Recorders in place of the dispatcher's launches; returns the list of calls."""
    try:
        d = importlib.import_module("array_api._dispatch")
    except ImportError:  # the dispatcher is not there yet: a stub module stands in
        d = types.ModuleType("array_api._dispatch")
        monkeypatch.setitem(sys.modules, "array_api._dispatch", d)
        monkeypatch.setattr(xp, "_dispatch", d, raising=False)
    calls = []

    def elementwise(op, operands, in_dtype, out_dtype, *, params=(), out=None):
        calls.append(Call(op, list(operands), in_dtype, out_dtype, tuple(params), out))
        if out is not None:
            return out
        shape = broadcast_shapes(*[a.shape for a in operands if isinstance(a, xp.Array)])
        return fake(shape, out_dtype)

    def fill(view, value):
        calls.append(Call("fill", [view, value], view.dtype, view.dtype, (), view))

    def copy_into(src, dst):
        calls.append(Call("copy_into", [src, dst], src.dtype, dst.dtype, (), dst))

    monkeypatch.setattr(d, "elementwise", elementwise, raising=False)
    monkeypatch.setattr(d, "fill", fill, raising=False)
    monkeypatch.setattr(d, "copy_into", copy_into, raising=False)
    import array_api._copy as cp

    monkeypatch.setattr(cp, "fill", fill)
    monkeypatch.setattr(cp, "copy_into", copy_into)
    return calls


def outcome(fn, *args, **kw):
    """'TypeError' / 'OverflowError' / 'ValueError' / 'Unsupported' / 'ok'."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            fn(*args, **kw)
    except UnsupportedError:
        return "Unsupported"
    except OverflowError:
        return "OverflowError"
    except TypeError:
        return "TypeError"
    except ValueError:
        return "ValueError"
    return "ok"


def s_arr(name, shape=(2,)):
    return strict.ones(shape, dtype=getattr(strict, name))


# ----------------------------------------------------------------------------- names
def test_every_standard_name_and_every_export_exists():
    for n in STANDARD:
        f = getattr(xp, n)
        assert callable(f) and f.__doc__, n
        assert n in xp.__all__, n
    for n in xp.__all__:
        assert hasattr(xp, n), n
    assert len(set(xp.__all__)) == len(xp.__all__)
    for n in ("relu", "gelu", "swiglu", "lerp", "addcmul", "fma", "prelu", "erfinv", "logit"):
        assert n in xp.__all__ and getattr(xp, n).__doc__
    ops = ("add sub mul truediv floordiv mod pow and or xor lshift rshift").split()
    for stem in ops:
        for form in ("", "r", "i"):
            assert hasattr(xp.Array, f"__{form}{stem}__"), (form, stem)
    for n in ("eq ne lt le gt ge abs neg pos invert matmul rmatmul imatmul setitem".split()):
        assert hasattr(xp.Array, f"__{n}__"), n
    assert xp.Array.__hash__ is None


# ----------------------------------------------------------------------------- categories
@pytest.mark.parametrize("name", STD_UNARY)
def test_unary_dtype_categories_match_strict(rec, name):
    for dt in COMMON:
        ours = outcome(getattr(xp, name), fake((2,), getattr(xp, dt)))
        ref = outcome(getattr(strict, name), s_arr(dt))
        if ours == "Unsupported":  # a valid dtype the kernels are not wired for: complex only
            assert ref == "ok" and dt.startswith("complex"), (name, dt)
        else:
            assert ours == ref, (name, dt, ours, ref)
    # extension floats are real floating; fp8 is storage-only
    want_float = name not in ("bitwise_invert", "logical_not", "imag")
    for dt in (xp.float16, xp.bfloat16):
        assert outcome(getattr(xp, name), fake((2,), dt)) == ("ok" if want_float
                                                              else "TypeError"), (name, dt)
    from array_api._dtypes import float8_e4m3

    assert outcome(getattr(xp, name), fake((2,), float8_e4m3)) == "Unsupported"


@pytest.mark.parametrize("name", STD_BINARY)
def test_binary_dtype_categories_match_strict(rec, name):
    for d1 in COMMON:
        for d2 in COMMON:
            ours = outcome(getattr(xp, name), fake((2,), getattr(xp, d1)),
                           fake((2,), getattr(xp, d2)))
            ref = outcome(getattr(strict, name), s_arr(d1), s_arr(d2))
            assert ours == ref, (name, d1, d2, ours, ref)
    assert outcome(getattr(xp, name), fake((2,), xp.bfloat16), fake((2,), xp.float16)) == (
        "ok" if "bitwise" not in name and "logical" not in name else "TypeError")


#: where we are stricter than array-api-strict: a complex scalar makes a real array complex,
#: and order comparisons / maximum / minimum are not defined for complex (numpy compares them)
STRICTER = {"greater", "greater_equal", "less", "less_equal", "maximum", "minimum"}


@pytest.mark.parametrize("name", STD_BINARY)
def test_binary_python_scalars_match_strict(rec, name):
    for dt in COMMON:
        for s in (True, 3, 1.5, 1j):
            for left in (False, True):
                a, sa = fake((2,), getattr(xp, dt)), s_arr(dt)
                args, sargs = ((s, a), (s, sa)) if left else ((a, s), (sa, s))
                ours = outcome(getattr(xp, name), *args)
                ref = outcome(getattr(strict, name), *sargs)
                if (ours, ref) == ("TypeError", "ok") and name in STRICTER:
                    assert isinstance(s, complex), (name, dt, s)
                    continue
                assert ours == ref, (name, dt, s, left, ours, ref)


def test_scalar_rules(rec):
    x = fake((3,), xp.int8)
    for bad in ((1, 2), (np.float64(1.0), x), (x, [1, 2]), (x, None), (x, "a")):
        with pytest.raises(TypeError):
            xp.add(*bad)
    for big, dt in ((128, xp.int8), (-1, xp.uint8), (1 << 64, xp.uint64), (-(1 << 63) - 1,
                                                                             xp.int64)):
        for f in (xp.add, xp.equal, xp.maximum):
            with pytest.raises(OverflowError):
                f(fake((2,), dt), big)
            with pytest.raises(OverflowError):
                f(big, fake((2,), dt))
    assert outcome(strict.add, s_arr("int8"), 128) == "OverflowError"
    with pytest.raises(OverflowError):
        xp.add(fake((2,), xp.float32), 10**400)
    with pytest.raises(ValueError):
        xp.bitwise_left_shift(x, -1)
    with pytest.raises(ValueError):
        xp.pow(x, -2)  # as array-api-strict (numpy): integers to negative integer powers
    assert outcome(strict.pow, s_arr("int8"), -2) == "ValueError"
    assert not rec


# ----------------------------------------------------------------------------- dispatch calls
def test_calls_unary(rec):
    f32, c64, i32, b = (fake((2, 3), xp.float32), fake((4,), xp.complex64),
                        fake((5,), xp.int32), fake((2,), xp.bool))
    bf = fake((7,), xp.bfloat16)
    xp.sin(f32)
    xp.abs(c64)
    xp.real(c64)
    xp.isnan(bf)
    xp.abs(i32)
    xp.bitwise_invert(b)
    xp.signbit(f32)
    got = [(c.op, c.operands, c.in_dtype, c.out_dtype, c.params, c.out) for c in rec]
    assert got == [("sin", [f32], xp.float32, xp.float32, (), None),
                   ("abs", [c64], xp.complex64, xp.float32, (), None),
                   ("real", [c64], xp.complex64, xp.float32, (), None),
                   ("isnan", [bf], xp.bfloat16, xp.bool, (), None),
                   ("abs", [i32], xp.int32, xp.int32, (), None),
                   ("bitwise_invert", [b], xp.bool, xp.bool, (), None),
                   ("signbit", [f32], xp.float32, xp.bool, (), None)]
    rec.clear()
    # no kernel needed: a new array (device copy), never x itself
    for f, x in ((xp.positive, f32), (xp.real, f32), (xp.conj, i32), (xp.ceil, i32),
                 (xp.floor, i32), (xp.trunc, i32), (xp.round, i32)):
        y = f(x)
        assert y is not x and rec[-1].op == "copy" and rec[-1].operands == [x]
        assert rec[-1].in_dtype == rec[-1].out_dtype == x.dtype
    xp.sin(c64)  # complex transcendental functions are wired
    assert rec[-1].op == "sin" and rec[-1].in_dtype == xp.complex64
    with pytest.raises(UnsupportedError):
        xp.round(c64)


def test_calls_binary_and_scalar_conversion(rec):
    f32, f16 = fake((2, 3), xp.float32), fake((3,), xp.float16)
    i8, i16 = fake((4,), xp.int8), fake((4,), xp.int16)
    y = xp.add(f32, f16)
    assert y.shape == (2, 3) and y.dtype == xp.float32
    c = rec[-1]
    assert (c.op, c.operands, c.in_dtype, c.out_dtype) == ("add", [f32, f16], xp.float32,
                                                           xp.float32)
    xp.multiply(i8, i16)
    assert rec[-1].operands == [i8, i16] and rec[-1].in_dtype == xp.int16
    xp.less(i8, i16)
    assert (rec[-1].op, rec[-1].in_dtype, rec[-1].out_dtype) == ("less", xp.int16, xp.bool)
    xp.divide(f16, 2)  # an int scalar joins a float array as a float
    assert rec[-1].operands == [f16, 2.0] and type(rec[-1].operands[1]) is float
    assert rec[-1].in_dtype == xp.float16
    xp.add(1j, f32)  # a complex scalar promotes a real array to complex
    c = rec[-1]
    assert c.operands == [1j, f32] and c.in_dtype == c.out_dtype == xp.complex64
    xp.equal(fake((2,), xp.bool), True)
    assert rec[-1].operands[1] is True and rec[-1].out_dtype == xp.bool
    xp.pow(fake((2,), xp.uint8), 3)
    assert rec[-1].operands[1] == 3 and type(rec[-1].operands[1]) is int


def test_calls_operators(rec):
    x, i = fake((2, 3), xp.float32), fake((3,), xp.int32)
    expect = [
        (lambda: 2 - x, "subtract", [2.0, x]), (lambda: x - 2, "subtract", [x, 2.0]),
        (lambda: x * x, "multiply", [x, x]), (lambda: 1 / x, "divide", [1.0, x]),
        (lambda: x // 2.5, "floor_divide", [x, 2.5]), (lambda: 7 % x, "remainder", [7.0, x]),
        (lambda: x ** 2, "pow", [x, 2.0]), (lambda: 2 ** x, "pow", [2.0, x]),
        (lambda: i & 3, "bitwise_and", [i, 3]), (lambda: 3 | i, "bitwise_or", [3, i]),
        (lambda: i ^ i, "bitwise_xor", [i, i]), (lambda: 1 << i, "bitwise_left_shift", [1, i]),
        (lambda: i >> 2, "bitwise_right_shift", [i, 2]), (lambda: x == 1, "equal", [x, 1.0]),
        (lambda: x != x, "not_equal", [x, x]), (lambda: x < 1, "less", [x, 1.0]),
        (lambda: 1 < x, "greater", [x, 1.0]), (lambda: x >= 0, "greater_equal", [x, 0.0]),
        (lambda: x <= i[None], None, None), (lambda: -x, "negative", [x]),
        (lambda: +x, "copy", [x]), (lambda: abs(x), "abs", [x]),
        (lambda: ~i, "bitwise_invert", [i]),
    ]
    for fn, op, operands in expect:
        if op is None:
            with pytest.raises(TypeError):  # int32 and float32 do not promote
                fn()
            continue
        n = len(rec)
        r = fn()
        assert len(rec) == n + 1 and isinstance(r, xp.Array)
        assert (rec[-1].op, rec[-1].operands, rec[-1].out) == (op, operands, None), op
        assert [type(a) for a in rec[-1].operands] == [type(a) for a in operands], op
    assert (x < 1).dtype == xp.bool and (x + 1).dtype == xp.float32


def test_in_place_operators(rec):
    x = fake((2, 3), xp.float32)
    v = x[:, ::2]
    r = x
    r += 1
    assert r is x
    assert (rec[-1].op, rec[-1].operands, rec[-1].out) == ("add", [x, 1.0], x)
    v *= fake((2, 1), xp.float16)
    assert rec[-1].out is v and rec[-1].in_dtype == xp.float32
    x **= 2
    x //= 3
    x -= x[0]
    assert [c.op for c in rec[-3:]] == ["pow", "floor_divide", "subtract"]
    assert all(c.out is x for c in rec[-3:])
    n = len(rec)
    with pytest.raises(TypeError):
        x += fake((3,), xp.float64)  # would promote to float64
    with pytest.raises(TypeError):
        x += 1j
    i = fake((3,), xp.int16)
    with pytest.raises(TypeError):
        i += 1.5
    with pytest.raises(TypeError):
        i /= 2  # true division is floating-only
    with pytest.raises(OverflowError):
        i += 1 << 15
    with pytest.raises(ValueError):
        fake((3,), xp.float32).__iadd__(x)  # broadcast shape (2, 3) != (3,)
    with pytest.raises(ValueError):
        x += fake((4,), xp.float32)
    assert len(rec) == n
    # array-api-strict raises the same classes
    sx = strict.ones((3,), dtype=strict.float32)
    for other, err in ((strict.ones((3,), dtype=strict.float64), TypeError),
                       (strict.ones((2, 3), dtype=strict.float32), ValueError), (1j, TypeError)):
        with pytest.raises(err):
            sx += other
    si = strict.ones((3,), dtype=strict.int16)
    with pytest.raises(TypeError):
        si += 1.5


def test_operators_return_not_implemented(rec):
    x = fake((3,), xp.float32)
    for other in ("a", None, [1.0], np.float64(1.0), np.ones(3), object()):
        for name in ("__add__", "__radd__", "__iadd__", "__eq__", "__lt__", "__and__",
                     "__rpow__", "__matmul__"):
            assert getattr(x, name)(other) is NotImplemented, (name, other)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        np.ones(3) + x  # numpy defers (__array_ufunc__ = None) and so do we
    assert (x == None) is False  # noqa: E711  (both sides NotImplemented: identity)
    with pytest.raises(ValueError):
        x @ fake((4,), xp.float32)  # shape mismatch: raised before any launch
    with pytest.raises(TypeError):
        hash(x)
    assert not rec


def test_clip(rec):
    f, i8 = fake((2, 3), xp.float32), fake((4,), xp.int8)
    xp.clip(f, 0)
    assert rec[-1].operands == [f, 0.0, math.inf] and rec[-1].in_dtype == xp.float32
    xp.clip(f, None, 6)
    assert rec[-1].operands == [f, -math.inf, 6.0]
    xp.clip(i8, -1000, 5)  # Python ints saturate to the dtype's range
    assert rec[-1].operands == [i8, -128, 5] and rec[-1].out_dtype == xp.int8
    xp.clip(fake((2,), xp.uint8), -3)
    assert rec[-1].operands[1:] == [0, 255]
    lo = fake((3,), xp.float64)
    xp.clip(f, lo, 1)
    assert rec[-1].operands == [f, lo, 1.0] and rec[-1].out_dtype == xp.float32
    y = xp.clip(f)
    assert y is not f and rec[-1].op == "copy"
    for dt in COMMON:
        for lo, hi in ((1, 2), (1.5, None), (None, True), (3, 1)):
            ours = outcome(xp.clip, fake((2,), getattr(xp, dt)), lo, hi)
            ref = outcome(strict.clip, s_arr(dt), lo, hi)
            assert ours == ref, (dt, lo, hi, ours, ref)
        for bdt in COMMON:
            ours = outcome(xp.clip, fake((2,), getattr(xp, dt)), fake((2,), getattr(xp, bdt)))
            ref = outcome(strict.clip, s_arr(dt), s_arr(bdt))
            assert ours == ref, (dt, bdt, ours, ref)


# ----------------------------------------------------------------------------- __setitem__
def test_setitem(rec):
    x = fake((4, 5), xp.float32)
    x[1] = 2
    c = rec[-1]
    assert c.op == "fill" and c.operands[1] == 2.0 and type(c.operands[1]) is float
    assert c.operands[0].shape == (5,) and c.operands[0]._ptr == x._ptr + 5 * 4
    x[:, 1] = 3.5  # a strided view: written in place by the dispatcher
    assert rec[-1].op == "fill" and rec[-1].operands[0].strides == (5,)
    h = fake((5,), xp.float16)
    x[2:, :] = h  # float16 → float32: broadcast + cast
    assert rec[-1].op == "copy_into" and rec[-1].operands[0] is h
    assert rec[-1].operands[1].shape == (2, 5)
    n = len(rec)
    with pytest.raises(TypeError):
        x[0] = 1j
    with pytest.raises(TypeError):
        x[0] = fake((5,), xp.float64)
    with pytest.raises(TypeError):
        x[0] = fake((5,), xp.int32)
    i = fake((3,), xp.int8)
    with pytest.raises(OverflowError):
        i[0] = 200
    with pytest.raises(TypeError):
        i[0] = 1.5
    with pytest.raises(TypeError):
        i[0] = True
    with pytest.raises(TypeError):
        fake((2,), xp.bool)[0] = 1
    other = xp.Array._new(1 << 20, (5,), (1,), xp.float32, xp.Device(1), None)
    with pytest.raises(ValueError):
        x[0] = other
    assert len(rec) == n
    # advanced keys are validated on the host before anything runs
    for key in (fake((2,), xp.float32), fake((9,), xp.bool), (0, 0, fake((2,), xp.int64))):
        with pytest.raises(IndexError):
            x[key]


# ----------------------------------------------------------------------------- ML extensions
def test_activations_calls(rec):
    x = fake((2, 6), xp.bfloat16)
    xp.gelu(x, approximate="tanh")
    assert rec[-1].op == "gelu_tanh" and rec[-1].in_dtype == xp.bfloat16
    xp.softplus(x, beta=2, threshold=10)
    assert (rec[-1].op, rec[-1].params) == ("softplus", (2.0, 10.0))
    xp.logit(x)
    assert rec[-1].params == (-1.0,)
    xp.logit(x, eps=1e-6)
    assert rec[-1].params == (1e-6,)
    xp.hardtanh(x, 0, 6)
    assert rec[-1].params == (0.0, 6.0)
    xp.threshold(x, 0.1, 20)
    assert rec[-1].params == (0.1, 20.0)
    xp.leaky_relu(x)
    assert rec[-1].params == (0.01,)
    a, b = fake((2, 6), xp.float32), fake((6,), xp.float32)
    xp.addcmul(a, a, b, value=0.5)
    assert (rec[-1].op, rec[-1].operands, rec[-1].params) == ("addcmul", [a, a, b], (0.5,))
    xp.lerp(a, b, 0.25)
    assert rec[-1].operands == [a, b, 0.25]
    xp.fma(a, 2, b)
    assert rec[-1].operands == [a, 2.0, b]
    y = xp.swiglu(x)
    ca = rec[-1]
    assert y.shape == (2, 3) and ca.op == "swiglu"
    h1, h2 = ca.operands
    assert h1.shape == h2.shape == (2, 3) and h1.strides == h2.strides == (6, 1)
    assert h1._ptr == x._ptr and h2._ptr == x._ptr + 3 * 2
    xp.glu(x, axis=0)
    h1, h2 = rec[-1].operands
    assert h1.shape == (1, 6) and h2._ptr == x._ptr + 6 * 2
    t = fake((2, 3, 4, 5), xp.float32)
    w = fake((3,), xp.float32)
    xp.prelu(t, w)
    ww = rec[-1].operands[1]
    assert ww.shape == (3, 1, 1) and ww.strides == (1, 0, 0) and ww._ptr == w._ptr
    assert broadcast_shapes(t.shape, ww.shape) == t.shape


def test_activations_errors(rec):
    for dt in (xp.int32, xp.bool, xp.complex64):
        with pytest.raises(TypeError):
            xp.relu(fake((3,), dt))
        with pytest.raises(TypeError):
            xp.swiglu(fake((4,), dt))
    from array_api._dtypes import float8_e5m2

    with pytest.raises(UnsupportedError):
        xp.silu(fake((3,), float8_e5m2))
    x = fake((2, 5), xp.float32)
    with pytest.raises(ValueError):
        xp.glu(x)  # odd axis length
    with pytest.raises(IndexError):
        xp.glu(x, axis=2)
    with pytest.raises(ValueError):
        xp.gelu(x, approximate="fast")
    with pytest.raises(ValueError):
        xp.hardtanh(x, 1.0, -1.0)
    with pytest.raises(ValueError):
        xp.softshrink(x, -0.5)
    with pytest.raises(ValueError):
        xp.prelu(fake((2, 3, 4), xp.float32), fake((4,), xp.float32))
    with pytest.raises(TypeError):
        xp.lerp(x, x, 1j)
    with pytest.raises(TypeError):
        xp.addcdiv(x, x, fake((5,), xp.int32))
    with pytest.raises(TypeError):
        xp.fma(1.0, 2.0, 3.0)
    assert not rec
