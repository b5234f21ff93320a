"""The array API standard's special-value tables (2024.12, elementwise_functions) as data: the
complex exp / expm1 / log1p / sinh / cosh / tanh / asinh / acosh / atanh / acos rows, the real
floor_divide rows and sign of signed zeros.  Each row: input(s) and the required result.

A complex row is ``(re, im, (want_re, want_im))``, a wanted component one of: a float (exact
value AND sign, zeros included; π multiples compared to the dtype's precision), ``NAN``, or
``Any(v)`` — ``±v``, sign unspecified by the standard.  Rows state the upper half plane as the
standard does; the tests add the conjugate row where the standard requires ``f(conj z) =
conj(f(z))``."""

import math
from typing import NamedTuple

INF = math.inf
NAN = "nan"
PI = math.pi
FIN = 2.0       # "a finite number" / "a positive finite number"
NZ = -3.0       # "a nonzero finite number" (negative, to also cover the non-positive reading)


class Any(NamedTuple):
    """A component whose sign the standard leaves unspecified."""
    value: float


COMPLEX = {
    "acos": [
        (0.0, 0.0, (PI / 2, -0.0)), (-0.0, 0.0, (PI / 2, -0.0)), (0.0, NAN, (PI / 2, NAN)),
        (-0.0, NAN, (PI / 2, NAN)), (FIN, INF, (PI / 2, -INF)), (NZ, NAN, (NAN, NAN)),
        (-INF, FIN, (PI, -INF)), (INF, FIN, (0.0, -INF)), (-INF, INF, (3 * PI / 4, -INF)),
        (INF, INF, (PI / 4, -INF)), (INF, NAN, (NAN, Any(INF))), (-INF, NAN, (NAN, Any(INF))),
        (NAN, FIN, (NAN, NAN)), (NAN, INF, (NAN, -INF)), (NAN, NAN, (NAN, NAN)),
    ],
    "acosh": [
        (0.0, 0.0, (0.0, PI / 2)), (-0.0, 0.0, (0.0, PI / 2)), (FIN, INF, (INF, PI / 2)),
        (NZ, NAN, (NAN, NAN)), (0.0, NAN, (NAN, Any(PI / 2))), (-INF, FIN, (INF, PI)),
        (INF, FIN, (INF, 0.0)), (-INF, INF, (INF, 3 * PI / 4)), (INF, INF, (INF, PI / 4)),
        (INF, NAN, (INF, NAN)), (-INF, NAN, (INF, NAN)), (NAN, FIN, (NAN, NAN)),
        (NAN, INF, (INF, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "asinh": [
        (0.0, 0.0, (0.0, 0.0)), (FIN, INF, (INF, PI / 2)), (FIN, NAN, (NAN, NAN)),
        (INF, FIN, (INF, 0.0)), (INF, INF, (INF, PI / 4)), (NAN, 0.0, (NAN, 0.0)),
        (NAN, FIN, (NAN, NAN)), (NAN, INF, (Any(INF), NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "atanh": [
        (0.0, 0.0, (0.0, 0.0)), (0.0, NAN, (0.0, NAN)), (1.0, 0.0, (INF, 0.0)),
        (FIN, INF, (0.0, PI / 2)), (NZ, NAN, (NAN, NAN)), (INF, FIN, (0.0, PI / 2)),
        (INF, INF, (0.0, PI / 2)), (INF, NAN, (0.0, NAN)), (NAN, FIN, (NAN, NAN)),
        (NAN, INF, (Any(0.0), PI / 2)), (NAN, NAN, (NAN, NAN)),
    ],
    "exp": [
        (0.0, 0.0, (1.0, 0.0)), (-0.0, 0.0, (1.0, 0.0)), (FIN, INF, (NAN, NAN)),
        (FIN, NAN, (NAN, NAN)), (INF, 0.0, (INF, 0.0)),
        (-INF, FIN, (0.0 * math.cos(FIN), 0.0 * math.sin(FIN))),
        (INF, FIN, (INF * math.cos(FIN), INF * math.sin(FIN))),
        (-INF, INF, (Any(0.0), Any(0.0))), (INF, INF, (Any(INF), NAN)),
        (-INF, NAN, (Any(0.0), Any(0.0))), (INF, NAN, (Any(INF), NAN)), (NAN, 0.0, (NAN, 0.0)),
        (NAN, FIN, (NAN, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "expm1": [
        (0.0, 0.0, (0.0, 0.0)), (-0.0, 0.0, (0.0, 0.0)), (FIN, INF, (NAN, NAN)),
        (FIN, NAN, (NAN, NAN)), (INF, 0.0, (INF, 0.0)), (-INF, FIN, (-1.0, 0.0 * math.sin(FIN))),
        (INF, FIN, (INF * math.cos(FIN), INF * math.sin(FIN))),
        (-INF, INF, (-1.0, Any(0.0))), (INF, INF, (Any(INF), NAN)),
        (-INF, NAN, (-1.0, Any(0.0))), (INF, NAN, (Any(INF), NAN)), (NAN, 0.0, (NAN, 0.0)),
        (NAN, FIN, (NAN, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "cosh": [
        (0.0, 0.0, (1.0, 0.0)), (0.0, INF, (NAN, Any(0.0))), (0.0, NAN, (NAN, Any(0.0))),
        (NZ, INF, (NAN, NAN)), (NZ, NAN, (NAN, NAN)), (INF, 0.0, (INF, 0.0)),
        (INF, FIN, (INF * math.cos(FIN), INF * math.sin(FIN))), (INF, INF, (Any(INF), NAN)),
        (INF, NAN, (INF, NAN)), (NAN, 0.0, (NAN, Any(0.0))), (NAN, -0.0, (NAN, Any(0.0))),
        (NAN, NZ, (NAN, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "sinh": [
        (0.0, 0.0, (0.0, 0.0)), (0.0, INF, (Any(0.0), NAN)), (0.0, NAN, (Any(0.0), NAN)),
        (FIN, INF, (NAN, NAN)), (FIN, NAN, (NAN, NAN)), (INF, 0.0, (INF, 0.0)),
        (INF, FIN, (INF * math.cos(FIN), INF * math.sin(FIN))), (INF, INF, (Any(INF), NAN)),
        (INF, NAN, (Any(INF), NAN)), (NAN, 0.0, (NAN, 0.0)), (NAN, FIN, (NAN, NAN)),
        (NAN, NAN, (NAN, NAN)),
    ],
    "tanh": [
        (0.0, 0.0, (0.0, 0.0)), (NZ, INF, (NAN, NAN)), (0.0, INF, (0.0, NAN)),
        (NZ, NAN, (NAN, NAN)), (7e16, NAN, (NAN, NAN)), (0.0, NAN, (0.0, NAN)),
        (INF, FIN, (1.0, 0.0)), (INF, INF, (1.0, Any(0.0))), (INF, NAN, (1.0, Any(0.0))),
        (NAN, 0.0, (NAN, 0.0)), (NAN, NZ, (NAN, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
    "log1p": [
        (-1.0, 0.0, (-INF, 0.0)), (FIN, INF, (INF, PI / 2)), (FIN, NAN, (NAN, NAN)),
        (-INF, FIN, (INF, PI)), (INF, FIN, (INF, 0.0)), (-INF, INF, (INF, 3 * PI / 4)),
        (INF, INF, (INF, PI / 4)), (INF, NAN, (INF, NAN)), (-INF, NAN, (INF, NAN)),
        (NAN, FIN, (NAN, NAN)), (NAN, INF, (INF, NAN)), (NAN, NAN, (NAN, NAN)),
    ],
}

#: floor_divide(x1, x2): the standard's rows (it prefers floor(x1 / x2) to Python's NaN / -1)
FLOOR_DIVIDE = [
    (NAN, 1.0, NAN), (1.0, NAN, NAN), (INF, INF, NAN), (-INF, INF, NAN), (0.0, 0.0, NAN),
    (-0.0, 0.0, NAN), (0.0, 2.0, 0.0), (-0.0, 2.0, -0.0), (0.0, -2.0, -0.0), (-0.0, -2.0, 0.0),
    (1.0, 0.0, INF), (1.0, -0.0, -INF), (-1.0, 0.0, -INF), (-1.0, -0.0, INF),
    (INF, 1.5, INF), (INF, -1.5, -INF), (-INF, 1.5, -INF), (-INF, -1.5, INF),
    (1.5, INF, 0.0), (1.5, -INF, -0.0), (-1.5, INF, -0.0), (-1.5, -INF, 0.0),
    (7.0, 2.0, 3.0), (-7.0, 2.0, -4.0), (7.0, -2.0, -4.0), (-7.0, -2.0, 3.0),
]

#: sign(x): either zero gives +0
SIGN = [(-0.0, 0.0), (0.0, 0.0), (-2.5, -1.0), (3.0, 1.0), (NAN, NAN), (-INF, -1.0)]
