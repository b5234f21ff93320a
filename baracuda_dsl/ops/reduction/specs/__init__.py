"""Pure-Python kernel specs of the reduction family (no DSL import): importing this package registers its templates."""

from . import axis_reduce  # noqa: F401
