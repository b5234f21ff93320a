"""Pure-Python kernel specs of the shape family (no DSL import): importing this package registers its templates."""

from . import repeat  # noqa: F401
from . import layout  # noqa: F401
from . import remap  # noqa: F401
from . import pad_bw2d  # noqa: F401
