"""Pure-Python kernel specs of the normalization family (no DSL import): importing this package registers its templates."""

from . import row_norm  # noqa: F401
from . import channel_norm  # noqa: F401
