"""Loss functions (extension): ``xp.losses.<name>`` with torch.nn.functional's names, argument
order and keywords (``reduction="none" | "mean" | "sum"``, plus ``"batchmean"`` for ``kl_div``).

Every function is forward-only and returns a new Array (0-D for ``mean``/``sum``); the backward
passes are the ``...BackwardPlan``s of ``baracuda_dsl.ops.losses``.  Sums and means are
deterministic (fixed-order, no atomics).  Half-precision inputs are computed in float32, float64
in float64.

=====================  ==============================================================
module                 functions
=====================  ==============================================================
``_pointwise``         mse_loss l1_loss huber_loss smooth_l1_loss soft_margin_loss
                       binary_cross_entropy binary_cross_entropy_with_logits kl_div
                       poisson_nll_loss gaussian_nll_loss hinge_embedding_loss
                       margin_ranking_loss multilabel_soft_margin_loss
``_cross_entropy``     cross_entropy nll_loss linear_cross_entropy (fused, chunked)
``_row``               cosine_embedding_loss multi_margin_loss multilabel_margin_loss
                       triplet_margin_loss ctc_loss
=====================  ==============================================================
"""

from . import _cross_entropy, _pointwise, _row
from ._cross_entropy import *  # noqa: F401,F403
from ._pointwise import *  # noqa: F401,F403
from ._row import *  # noqa: F401,F403

__all__ = [*_pointwise.__all__, *_cross_entropy.__all__, *_row.__all__]
