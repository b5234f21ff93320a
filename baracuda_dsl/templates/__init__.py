"""Kernel template specs (pure Python, no DSL import): importing this package registers every
template of every family with :func:`baracuda_dsl.jit.register`."""

from . import row_norm  # noqa: F401
from . import channel_norm  # noqa: F401
from . import repeat  # noqa: F401
from . import elementwise  # noqa: F401
from . import scan  # noqa: F401
from . import sort  # noqa: F401
from . import histogram  # noqa: F401
from . import axis_reduce  # noqa: F401
from . import gather  # noqa: F401
from . import remap  # noqa: F401
from . import layout  # noqa: F401
from . import indexing  # noqa: F401
from . import segment  # noqa: F401
from . import pad_bw2d  # noqa: F401
from . import random  # noqa: F401
from . import loss_row  # noqa: F401
from . import ctc  # noqa: F401
from . import gemm  # noqa: F401
from . import loss_pointwise  # noqa: F401
from . import cross_entropy  # noqa: F401
from . import gemm_sm90  # noqa: F401
from . import softmax  # noqa: F401
from . import gemm_tf32  # noqa: F401
from . import gemm_int8  # noqa: F401
from . import gemm_fp8  # noqa: F401
