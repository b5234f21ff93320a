"""Pure-Python kernel specs of the sorting family (no DSL import): importing this package registers its templates."""

from . import sort  # noqa: F401
