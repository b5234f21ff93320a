"""Pure-Python kernel specs of the indexing family (no DSL import): importing this package registers its templates."""

from . import gather  # noqa: F401
from . import indexing  # noqa: F401
