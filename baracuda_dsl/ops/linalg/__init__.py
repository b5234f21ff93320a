"""The linalg family: Cholesky, LU, linear solve, inverse, QR, SVD, Hermitian and general
eigendecompositions on cuSOLVER (nvmath-python bindings), composed with the shape family's copies;
``raise_for_info`` turns the per-matrix solver info words into typed LinAlgErrors."""

from .common import raise_for_info
from .factor import (CholeskyArgs, CholeskyDescriptor, CholeskyPlan, InverseArgs,
                     InverseDescriptor, InversePlan, LUArgs, LUDescriptor, LUPlan, SolveArgs,
                     SolveDescriptor, SolvePlan)
from .qr import QRArgs, QRDescriptor, QRPlan
from .spectral import (EigArgs, EigDescriptor, EighArgs, EighDescriptor, EighPlan, EigPlan,
                       SVDArgs, SVDDescriptor, SVDPlan)

__all__ = [
    "CholeskyArgs", "CholeskyDescriptor", "CholeskyPlan", "InverseArgs", "InverseDescriptor",
    "InversePlan", "LUArgs", "LUDescriptor", "LUPlan", "SolveArgs", "SolveDescriptor",
    "SolvePlan", "QRArgs", "QRDescriptor", "QRPlan", "EigArgs", "EigDescriptor", "EighArgs",
    "EighDescriptor", "EighPlan", "EigPlan", "SVDArgs", "SVDDescriptor", "SVDPlan",
    "raise_for_info",
]
