"""Strength tables: a player against a list of opponents, head to head against a reference, and
the search over it against the network alone (what the search adds), on paired deals, with the
play diagnostics and, where a value function is given, the luck-corrected estimate that every
row's decision rests on (evaluate/variance.py).

``match_row`` plays one match and returns its figures; ``strength_rows`` the standard table of a
network (docs/log/results.md, the champion's card); ``markdown`` renders rows. ``deepcfr strength``
calls them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..evaluate.arena import play_match
from .build import load_player

# The fixed reference network every growing-teacher round is measured against head to head
# (reference/README.md): a file of the source checkout, not installed with the package.
REFERENCE_FILE = Path(__file__).resolve().parents[3] / "reference" / "lost_cities_one_round.pt"


def match_row(
    game,
    a: str,
    b: str,
    games: int,
    seed: int,
    value_fn=None,
    target_ci: float | None = None,
    batch_games: int = 2000,
    chance_samples: int | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> dict:
    """One match of spec ``a`` against spec ``b`` (paired deals): its figures, the estimate the
    row stands on (``score_diff`` / ``score_diff_ci``: corrected where there is a value function),
    seconds, and the seconds a searched move took where A searches (``on_step``: progress, as
    ``play_match`` calls it)."""
    player_a, player_b = load_player(a, game), load_player(b, game)
    start = time.perf_counter()
    result = play_match(
        game,
        player_a,
        player_b,
        games,
        seed=seed,
        value_fn=value_fn,
        target_ci95=target_ci,
        batch_games=batch_games,
        chance_samples=chance_samples,
        on_step=on_step,
    )
    mean, ci = result.best_score_diff
    row = {
        "a": a,
        "b": b,
        "games": result.games,
        "win_rate_ci95": result.win_rate_ci95,
        **result.figures(),
        "score_diff": mean,
        "score_diff_ci": ci,
        "seconds": time.perf_counter() - start,
    }
    if result.correction_seconds is not None:
        row["correction_seconds"] = result.correction_seconds
    stats = getattr(player_a, "stats", None)
    if stats is not None and stats.decisions:
        row["seconds_per_searched_move"] = stats.seconds / stats.decisions
    return row


def strength_matches(
    net: str,
    opponents: list[str],
    reference: str | None,
    games: int,
    search_specs: list[str],
    search_games: int,
    search_opponents: Sequence[str] = (),
) -> list[tuple[str, str, int]]:
    """The standard table's matches of network ``net``: greedy against ``reference`` (greedy) and
    each opponent; each search spec (``{net}`` stands for the network) against the network alone
    (greedy: what the search adds) and against each of ``search_opponents``."""
    matches = [(f"{net}@greedy", f"{reference}@greedy", games)] if reference else []
    matches += [(f"{net}@greedy", opponent, games) for opponent in opponents]
    for template in search_specs if search_games else []:
        spec = template.format(net=net)
        matches += [(spec, f"{net}@greedy", search_games)]
        matches += [(spec, opponent, search_games) for opponent in search_opponents]
    return matches


def strength_rows(
    game,
    matches: list[tuple[str, str, int]],
    seed: int,
    value_fn=None,
    target_ci: float | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict]:
    rows = []
    for a, b, games in matches:
        rows.append(match_row(game, a, b, games, seed, value_fn, target_ci))
        if on_row is not None:
            on_row(rows[-1])
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table: the plain estimate, the corrected one where measured, with
    the variance ratio, and the diagnostics."""
    corrected = any("corrected_score_diff" in r for r in rows)
    head = "| A | B | games | win rate | score diff |"
    rule = "| --- | --- | ---: | ---: | ---: |"
    if corrected:
        head += " corrected | variance ratio |"
        rule += " ---: | ---: |"
    lines = [head + " game length | useless pile draws A / B | s/move |", rule + " ---: | ---: | ---: |"]
    for r in rows:
        s_move = f"{r['seconds_per_searched_move']:.3f}" if "seconds_per_searched_move" in r else ""
        draws = (
            f"{r['useless_pile_draws_a']:.2f} / {r['useless_pile_draws_b']:.2f}" if "useless_pile_draws_a" in r else "-"
        )
        line = (
            f"| `{r['a']}` | `{r['b']}` | {r['games']} | {100 * r['win_rate']:.1f}% +- "
            f"{100 * r['win_rate_ci95']:.1f} | {r['mean_score_diff']:+.2f} +- {r['score_diff_ci95']:.2f} |"
        )
        if corrected:
            line += (
                f" {r['corrected_score_diff']:+.2f} +- {r['corrected_ci95']:.2f} | {r['variance_ratio']:.2f} |"
                if "corrected_score_diff" in r
                else " | |"
            )
        lines.append(line + f" {r['mean_game_length']:.1f} | {draws} | {s_move} |")
    return "\n".join(lines)


__all__ = ["match_row", "strength_matches", "strength_rows", "markdown", "REFERENCE_FILE"]
