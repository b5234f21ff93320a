"""Kernel template specs (pure Python, no DSL import): importing this package registers every
template of every family with :func:`baracuda_dsl.jit.register`."""

from . import row_norm  # noqa: F401
from . import channel_norm  # noqa: F401
from . import repeat  # noqa: F401
from . import elementwise  # noqa: F401
