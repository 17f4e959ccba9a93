"""
The network simulator (C{nodex simulate}, C{docs/simulation.md}): hundreds
of nodes composed as production composes them, in one process, on a
simulated network and a simulated clock.
"""
