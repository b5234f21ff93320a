"""Pure-Python kernel specs of the elementwise family (no DSL import): importing this package registers its templates."""

from . import elementwise  # noqa: F401
