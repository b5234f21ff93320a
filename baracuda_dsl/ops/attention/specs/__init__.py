"""Pure-Python kernel specs of the attention family (no DSL import): importing this package
registers its templates."""

from . import alibi, decode, flash, flash_bwd, flash_bwd_sm90, kv_cache, rope, sdpa  # noqa: F401
