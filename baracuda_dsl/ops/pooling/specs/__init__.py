"""Pure-Python kernel specs of the pooling family (no DSL import): importing this package registers its templates."""

from . import pool  # noqa: F401
from . import fractional, lp, unpool  # noqa: F401
