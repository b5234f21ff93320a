"""Pure-Python pieces that several op families' specs and plans share (no DSL import): the
CuTe DSL halves of shared building blocks live in :mod:`baracuda_dsl.blocks`."""
