"""baracuda_dsl/blocks"""
