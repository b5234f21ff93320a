"""The conv family: 1-D / 2-D / 3-D convolution and transposed convolution — forward (with a
bias / ReLU epilogue), backward-data and backward-filter — on cuDNN through NVIDIA's Python
frontend (``nvidia-cudnn-frontend``; vendor backend, no DSL templates)."""

from .conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan, ConvBackwardFilterArgs,
                   ConvBackwardFilterPlan, ConvDescriptor, ConvPlan, ConvTuning)

__all__ = ["ConvArgs", "ConvBackwardDataArgs", "ConvBackwardDataPlan", "ConvBackwardFilterArgs",
           "ConvBackwardFilterPlan", "ConvDescriptor", "ConvPlan", "ConvTuning"]
