"""Constants of the standard: ``e``, ``pi``, ``inf``, ``nan`` (Python floats) and ``newaxis``
(``None``, for ``x[:, newaxis]``)."""

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

__all__ = ["e", "pi", "inf", "nan", "newaxis"]
