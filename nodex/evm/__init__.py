"""
The EVM interpreter: instructions by category, gas, precompiles, tracer hooks (L3).
"""
