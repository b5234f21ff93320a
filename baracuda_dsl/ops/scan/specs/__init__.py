"""Pure-Python kernel specs of the scan family (no DSL import): importing this package registers its templates."""

from . import scan  # noqa: F401
