"""A mixin for the trace-time helper objects of the sm90a blocks."""


class LoopInvariant:
    """An object built once inside a kernel trace (it may hold DSL values) and never changed
    afterwards: it takes part in the DSL's value protocol with *no* values, so the kernel's
    run-time ``if`` / ``for`` regions read its fields as the loop-invariant values they are
    instead of trying to carry the object through them (its Python ints stay compile-time)."""

    def __get_mlir_types__(self):
        return []

    def __extract_mlir_values__(self):
        return []

    def __new_from_mlir_values__(self, values):
        return self
