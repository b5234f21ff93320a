"""Pure-Python kernel specs of the random family (no DSL import): importing this package registers its templates."""

from . import random  # noqa: F401
