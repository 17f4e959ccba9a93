"""
C{nodex simulate --plot FILE.png}: the propagation curves of a run, drawn
with matplotlib (an optional extra: C{pip install nodex[plot]}).
"""

from pathlib import Path
from typing import Any

from nodex.errors import NodexError


class PlotUnavailableError(NodexError):
    """
    matplotlib is not installed.
    """


def plot_propagation(curves: list[list[float]], summary: dict[str, Any], path: Path) -> None:
    """
    Draw, left, the share of the nodes holding each block against the
    milliseconds since it was mined (a thin line per block, the median
    bold); right, the distribution over blocks of the time to reach 50 %,
    90 % and 100 % of the nodes.  Write a PNG to C{path}.

    @param curves: per block, the number of nodes that ran when it was
        mined and the seconds after mining at which each of them stored it
        (L{nodex.simulation.runner.Simulation.propagation_curves}).
    @raise PlotUnavailableError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        raise PlotUnavailableError(
            "--plot needs matplotlib, an optional extra: pip install 'nodex[plot]'"
        ) from None
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(12, 4.5))
    title = (
        f"{summary['scenario']}: {summary['nodes']} nodes, {summary['blocks']} blocks, "
        f"block time {summary['block_time_s']:g} s, seed {summary['seed']}"
    )
    figure.suptitle(title)
    for population, curve in curves:
        shares = [(index + 1) / population * 100 for index in range(len(curve))]
        left.step([value * 1000 for value in curve], shares, where="post", color="tab:blue", alpha=0.08, linewidth=0.8)
    ranks = max((population for population, _ in curves), default=0)
    if ranks:
        # The median block: at each share of the nodes, the median time over the blocks that reached it.
        times, shares = [], []
        for rank in range(ranks):
            reached = sorted(curve[rank] for population, curve in curves if rank < len(curve) and population == ranks)
            if reached:
                times.append(reached[len(reached) // 2] * 1000)
                shares.append((rank + 1) / ranks * 100)
        left.step(times, shares, where="post", color="tab:red", linewidth=2, label="median block")
        left.legend(loc="lower right")
    left.set_xlabel("ms since the block was mined")
    left.set_ylabel("% of the nodes holding it")
    left.set_ylim(0, 101)
    left.grid(alpha=0.3)
    by_share = summary.get("propagation_ms_by_share", {})
    for share, colour in (("50", "tab:green"), ("90", "tab:orange"), ("100", "tab:purple")):
        delays = []
        for population, curve in curves:
            needed = max(1, -(-int(share) * population // 100))
            if len(curve) >= needed:
                delays.append(curve[needed - 1] * 1000)
        delays.sort()
        if delays:
            percentiles = by_share.get(share, {})
            label = f"{share} % of nodes (p50 {percentiles.get('p50')} ms, p99 {percentiles.get('p99')} ms)"
            right.step(delays, [(index + 1) / len(delays) * 100 for index in range(len(delays))], where="post",
                       color=colour, label=label)
    right.set_xlabel("ms to reach the share of the nodes")
    right.set_ylabel("% of the blocks")
    right.set_ylim(0, 101)
    right.grid(alpha=0.3)
    right.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


__all__ = ["PlotUnavailableError", "plot_propagation"]
