"""Pure-Python kernel specs of the gemm family (no DSL import): importing this package registers its templates."""

from . import gemm  # noqa: F401
from . import gemm_sm90  # noqa: F401
from . import gemm_tf32  # noqa: F401
from . import gemm_int8  # noqa: F401
from . import gemm_fp8  # noqa: F401
