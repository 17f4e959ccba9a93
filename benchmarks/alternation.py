"""
Rounds of a benchmark's variants, alternated: each round runs every variant
once, in order, and prints its figure; the end gives each variant's range.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

V = TypeVar("V")


def alternate(rounds: int, variants: Sequence[V], run: Callable[[V], float], unit: str, digits: int = 0) -> dict[V, list[float]]:
    """
    Run C{run(variant)} for every variant, C{rounds} times over, printing
    each figure as it comes and each variant's range at the end.

    @param unit: what a figure counts (C{"CPU us/block"}).
    @param digits: decimal places to print.
    @return: the figures of each variant, in round order.
    """
    results: dict[V, list[float]] = {variant: [] for variant in variants}
    for round_number in range(1, rounds + 1):
        print(f"round {round_number} (load {os.getloadavg()[0]:.1f})", flush=True)
        for variant in variants:
            figure = run(variant)
            results[variant].append(figure)
            print(f"  {variant}: {figure:,.{digits}f} {unit}", flush=True)
    print()
    for variant, figures in results.items():
        print(f"{variant}: {min(figures):,.{digits}f}-{max(figures):,.{digits}f} {unit}")
    return results
