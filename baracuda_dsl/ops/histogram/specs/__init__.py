"""Pure-Python kernel specs of the histogram family (no DSL import): importing this package registers its templates."""

from . import histogram  # noqa: F401
