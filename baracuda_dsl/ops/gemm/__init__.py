"""The gemm family: Matrix products: GEMM (wgmma on sm90a, mma.sync, tf32, SIMT), batched and
grouped GEMM, int8 and fp8 GEMM; ``GemmTuning`` forces their tile / split-K choices."""

from .gemm import (GemmArgs, GemmDescriptor, GemmPlan)
from .gemm_batched import (BatchedGemmArgs, BatchedGemmDescriptor, BatchedGemmPlan, GroupedGemmArgs,
                           GroupedGemmDescriptor, GroupedGemmPlan)
from .gemm_fp8 import (Fp8GemmArgs, Fp8GemmDescriptor, Fp8GemmPlan)
from .gemm_int import (IntGemmArgs, IntGemmDescriptor, IntGemmPlan)
from .tuning import GemmTuning

__all__ = [
    "GemmArgs", "GemmDescriptor", "GemmPlan", "BatchedGemmArgs", "BatchedGemmDescriptor",
    "BatchedGemmPlan", "GroupedGemmArgs", "GroupedGemmDescriptor", "GroupedGemmPlan",
    "Fp8GemmArgs", "Fp8GemmDescriptor", "Fp8GemmPlan", "IntGemmArgs", "IntGemmDescriptor",
    "IntGemmPlan", "GemmTuning",
]
