"""The gate of an improvement round: whether the new network replaces the current one.

Head to head against its own last self is a non-transitive yardstick: rounds 15 to 19 of the
shipped champion each beat their predecessor while, measured against outside players, they grew
weaker. Where the game has a benchmark population (players/population.py) the gate asks
everyone, on the same deals for both networks (one seed per member): the new network replaces
the current one only if

1. it is not worse head to head: the 95% CI of its score difference reaches 0 or above;
2. its population score rises: the mean over the members of (its margin minus the current
   network's margin) is above 0, one-sided p < ``gate_alpha``;
3. no member's margin falls by more than its CI: for every member the difference is at least
   minus its 95% CI half-width.

The members asked are the scored ones: the floors (players/population.py) are not judged.

The two networks' CIs are combined as if independent: conservative, as the shared deals
correlate the two margins positively. Without a population (or with ``gate_population_games``
0) the gate is the head-to-head test alone: accepted when the one-sided p < ``gate_alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping

GATE_RULES = (
    "head to head not worse (its 95% CI reaches 0)",
    "population score rises (one-sided p < gate_alpha)",
    "no member's margin falls by more than its CI",
)


def one_sided_p(mean: float, ci95: float) -> float:
    """p of the one-sided test 'mean paired difference > 0' from the mean and its 95% CI
    half-width (normal approximation over the deal pairs)."""
    se = ci95 / 1.959964 if math.isfinite(ci95) else 0.0
    if se <= 0:
        return 0.0 if mean > 0 else 1.0 if mean < 0 else 0.5
    return 0.5 * math.erfc(mean / se / math.sqrt(2))


def population_margins(members, play: Callable[[object], tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """``{member name: (margin, 95% CI)}``: ``play(member)`` is the measured network's match
    against that member (mean score difference and CI half-width)."""
    margins = {}
    for member in members:
        margin, ci95 = play(member)
        margins[member.name] = (margin, ci95)
    return margins


def population_verdict(
    head_to_head: tuple[float, float],
    new: Mapping[str, tuple[float, float]],
    current: Mapping[str, tuple[float, float]],
    alpha: float,
    scored: Collection[str] | None = None,
) -> tuple[bool, dict]:
    """The gate's three questions (module docstring) from the head-to-head estimate (new minus
    current: mean, CI) and each network's margins against the same members, of which the
    ``scored`` ones (None: all) count (records of version-1 populations hold the floors' margins
    too). Returns (accepted, the figures the gate reports)."""
    if set(new) != set(current) or not new:
        raise ValueError(f"the two networks were measured against other members: {sorted(new)} and {sorted(current)}")
    h2h_mean, h2h_ci = head_to_head
    counted = [m for m in new if scored is None or m in scored]
    if not counted:
        raise ValueError(f"no scored member among {sorted(new)}")
    diffs = {m: (new[m][0] - current[m][0], math.hypot(new[m][1], current[m][1])) for m in counted}
    n = len(counted)
    rise = sum(diffs[m][0] for m in counted) / n
    rise_ci = math.sqrt(sum(diffs[m][1] ** 2 for m in counted)) / n
    worst = min(diffs, key=lambda m: diffs[m][0] + diffs[m][1])  # the member closest to falling past its CI
    checks = {
        "head_to_head_not_worse": h2h_mean + h2h_ci >= 0,
        "population_rises": one_sided_p(rise, rise_ci) < alpha,
        "no_member_falls": all(d >= -ci for d, ci in diffs.values()),
    }
    figures = {
        "gate/population_score_new": sum(new[m][0] for m in counted) / n,
        "gate/population_score_current": sum(current[m][0] for m in counted) / n,
        "gate/population_rise": rise,
        "gate/population_rise_ci95": rise_ci,
        "gate/population_rise_p_value": one_sided_p(rise, rise_ci),
        "gate/closest_to_falling": worst,
        "gate/closest_to_falling_diff": diffs[worst][0],
        "gate/closest_to_falling_ci95": diffs[worst][1],
        **{f"gate/{k}": int(v) for k, v in checks.items()},
        **{f"gate/member/{m}/diff": d for m, (d, _) in diffs.items()},
        **{f"gate/member/{m}/diff_ci95": ci for m, (_, ci) in diffs.items()},
    }
    return all(checks.values()), figures


__all__ = ["GATE_RULES", "one_sided_p", "population_margins", "population_verdict"]
