"""Pure-Python kernel specs of the softmax family (no DSL import): importing this package registers its templates."""

from . import softmax  # noqa: F401
