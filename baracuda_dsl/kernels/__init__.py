"""CuTe DSL kernel code. These modules import ``cutlass`` and are only imported by the compiler
worker processes (``baracuda_dsl.jit.compiler``), never at run time."""
