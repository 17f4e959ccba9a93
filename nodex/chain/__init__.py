"""
Chain rules: genesis, transaction and block processing, validation, fork choice, seals (L4).
"""
