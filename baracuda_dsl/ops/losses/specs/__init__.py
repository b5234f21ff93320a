"""Pure-Python kernel specs of the losses family (no DSL import): importing this package registers its templates."""

from . import loss_row  # noqa: F401
from . import ctc  # noqa: F401
from . import loss_pointwise  # noqa: F401
from . import cross_entropy  # noqa: F401
