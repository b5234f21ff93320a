"""Pure-Python kernel specs of the segment family (no DSL import): importing this package registers its templates."""

from . import segment  # noqa: F401
