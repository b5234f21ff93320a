"""The conv family: 1-D / 2-D / 3-D convolution and transposed convolution — forward (with a
bias / ReLU epilogue), backward-data and backward-filter — on cuDNN through NVIDIA's Python
frontend (``nvidia-cudnn-frontend``; vendor backend) — and im2col / col2im (unfold / fold) over
1-3 spatial dims with their backward plans (CuTe DSL templates ``im2col`` / ``col2im``)."""

from .conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan, ConvBackwardFilterArgs,
                   ConvBackwardFilterPlan, ConvDescriptor, ConvPlan, ConvTuning)
from .im2col import (Col2ImArgs, Col2ImBackwardArgs, Col2ImBackwardPlan, Col2ImDescriptor,
                     Col2ImPlan, Im2ColArgs, Im2ColBackwardArgs, Im2ColBackwardPlan,
                     Im2ColDescriptor, Im2ColPlan, unfold_blocks)

__all__ = ["ConvArgs", "ConvBackwardDataArgs", "ConvBackwardDataPlan", "ConvBackwardFilterArgs",
           "ConvBackwardFilterPlan", "ConvDescriptor", "ConvPlan", "ConvTuning",
           "Im2ColDescriptor", "Col2ImDescriptor", "Im2ColArgs", "Col2ImArgs",
           "Im2ColBackwardArgs", "Col2ImBackwardArgs", "Im2ColPlan", "Col2ImPlan",
           "Im2ColBackwardPlan", "Col2ImBackwardPlan", "unfold_blocks"]
