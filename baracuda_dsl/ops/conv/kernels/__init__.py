"""CuTe DSL kernels of the conv family: none (its backend is cuDNN, see ``specs``)."""
