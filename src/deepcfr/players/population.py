"""The benchmark population (issue 65): the one list of players that strength is measured against.

Head to head against one's own last self is a non-transitive yardstick (docs/log/population.md,
"Why a population"), so a player's strength is its score against a fixed, versioned
population of players of distinct styles: the bots, the reference network, earlier champions
and one of them sampled. ``deepcfr strength SPEC --population``, the gate and the card all read it
from here; a change of its members bumps ``POPULATION_VERSION`` (population scores of different
versions are not comparable).

- ``population_members(game)``: the members for a game, with the members that cannot play it
  (a file missing from this install, a network of other rules) skipped with a reason, and a
  member that is the player measured kept as ``self``: its row is 0 +- 0 by symmetry, so that
  every player's population score is the mean over the same members;
- ``population_rows``: one match of a player against every member, paired deals, the
  luck-corrected estimate where a value function is given (players/strength.py ``match_row``);
- ``population_summary``: the population score (the mean of the scored members' score differences,
  equal weights; members are independent matches, so its 95% CI is sqrt(sum ci_i^2) / n) and the
  worst member (the lowest score difference, the player itself aside).

Floors (``FLOOR_BOTS``: ``random``, ``discard_only``) are played and shown, but neither scored nor
asked by the gate: a champion wins every game against them by 130-190 points, and that margin
moves by whole points with nothing a stronger player needs (a league round that met them in
training raised the version-1 score by +2.0 of its +2.3 through those two, level on the thirteen
others; docs/log/population.md, "A league round, and version 2: floors out of the score").

Earlier champions: every ``champion/past/round_N.pt`` shipped beside the champion joins the
population (greedy, ``champion round N@greedy``), in round order, and round
``SAMPLED_CHAMPION_ROUND`` also plays sampled from its policy (``champion round 19 sampled``).
These are fixed files, not "whatever champion is shipped": a population score stays comparable
when a new champion ships.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..player_specs import parse_player
from .shipped import HERE as CHAMPION_DIR
from .strength import REFERENCE_FILE, match_row

# Version 1 (issue 65): the five bots, five style bots, the reference network (round 1), the
# earlier champions shipped in champion/past/ (rounds 7, 13 and 19, greedy) and round 19 sampled
# (the champion when this version was fixed). Version 2: the same members, the floors out of the score.
POPULATION_VERSION = 2
SAMPLED_CHAMPION_ROUND = 19

POPULATION_BOTS = (
    "random",
    "discard_only",
    "heuristic_careful",
    "heuristic_balanced",
    "heuristic_aggressive",
    "never_pile",
    "denier",
    "rusher",
    "wager_gambler",
    "patient_opener",
)
# played and guarded by the gate, not scored (module docstring)
FLOOR_BOTS = ("random", "discard_only")
# Where earlier champions are shipped: round_N.pt, each a network checkpoint (players/export.py).
PAST_CHAMPIONS_DIR = CHAMPION_DIR / "past"
_PAST_NAME = re.compile(r"^round_(\d+)\.pt$")


SELF = "self"  # a member that is the player measured: its row is 0 +- 0 without a game
FLOOR = "floor"  # a member played and guarded, not in the population score


@dataclass(frozen=True)
class Member:
    """A member of the population: ``name`` in tables, ``spec`` the player spec it is built from."""

    name: str
    spec: str
    kind: str  # "bot" | FLOOR | "reference" | "champion" | "past_champion" | SELF (the player measured)

    @property
    def scored(self) -> bool:
        """Whether the member counts in the population score (the floors do not)."""
        return self.kind != FLOOR


def past_champion_files(directory: Path = PAST_CHAMPIONS_DIR) -> list[tuple[int, Path]]:
    """The earlier champions shipped in ``directory`` (``round_N.pt``), by round."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _PAST_NAME.match(p.name)) and p.is_file()]
    return sorted(found)


def population_specs(past_dir: Path = PAST_CHAMPIONS_DIR) -> list[Member]:
    """Every member of this version of the population, whatever the game (``population_members``
    keeps those that can play one)."""
    members = [Member(name, name, FLOOR if name in FLOOR_BOTS else "bot") for name in POPULATION_BOTS]
    members.append(Member("reference@greedy", f"{REFERENCE_FILE}@greedy", "reference"))
    past = past_champion_files(past_dir)
    members += [Member(f"champion round {n}@greedy", f"{path}@greedy", "past_champion") for n, path in past]
    sampled = dict(past).get(SAMPLED_CHAMPION_ROUND)
    if sampled is not None:  # a fixed file, so that the population stays when another champion ships
        members.append(Member(f"champion round {SAMPLED_CHAMPION_ROUND} sampled", str(sampled), "champion"))
    return members


def population_members(
    game, player: str | None = None, past_dir: Path = PAST_CHAMPIONS_DIR, device="cpu"
) -> tuple[list[Member], list[dict]]:
    """(the members that play ``game``, the skipped ones as ``{"member", "reason"}``). A bot must be
    a bot of the game; a network's file must be in this install and play the game's rules (it is
    loaded to check). ``player``, the spec being measured, is skipped where a member is the same
    player (its row would be zero by symmetry)."""
    from ..games.bots import bot_names
    from .build import load_player

    bots = set(bot_names(game))
    members, skipped = [], []
    measured = player_identity(player) if player is not None else None  # hashed once, not per member
    for member in population_specs(past_dir):
        reason = None
        if member.kind in ("bot", FLOOR):
            if member.name not in bots:
                reason = f"not a bot of {game.name}"
        elif member.kind == "reference" and not REFERENCE_FILE.is_file():
            reason = f"the reference network is a file of the source checkout, missing here ({REFERENCE_FILE})"
        if reason is None and member.kind not in ("bot", FLOOR):
            try:
                load_player(member.spec, game, device)
            except ValueError as e:  # another game or rule variant (CheckpointError is a ValueError)
                reason = str(e).splitlines()[0]
        if reason is None and player is not None and player_identity(member.spec) == measured:
            member = Member(member.name, member.spec, SELF)
        if reason is None:
            members.append(member)
        else:
            skipped.append({"member": member.name, "reason": reason})
    return members, skipped


def player_identity(text: str):
    """What makes spec ``text`` the player it is (checkpoints by what the files hold: an earlier
    champion taken from its commit is the member shipped in champion/past/); a spec that cannot be
    read is its own text."""
    from .build import checkpoint_file
    from .shipped import file_sha256

    try:
        spec = parse_player(text)
        inner = spec.innermost
        path = inner.path
        if inner.kind == "checkpoint":
            file = checkpoint_file(inner)  # the champion's too: it is one of the earlier champions' files
            path = file_sha256(file) if file.is_file() else str(file.resolve())
        settings = sorted(spec.settings.items()) if spec.kind == "search" else None
        return spec.kind, settings, inner.kind, inner.name, path, inner.policy, inner.greedy
    except (ValueError, OSError):
        return text


def same_player(a: str, b: str) -> bool:
    """Whether specs ``a`` and ``b`` name the same player (``player_identity``)."""
    return player_identity(a) == player_identity(b)


def population_rows(
    game,
    player: str,
    members: list[Member],
    games: int,
    seed: int,
    value_fn=None,
    member_target_ci: float | None = None,
    on_row: Callable[[dict], None] | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> list[dict]:
    """``player`` against every member (``match_row``: paired deals, the corrected estimate where
    there is a value function; ``member_target_ci``: each match plays until its CI is at most this,
    ``games`` being the most). Each row gains ``member`` (its name) and ``kind``."""
    rows = []
    for member in members:
        if member.kind == SELF:  # the player itself: level by symmetry on paired deals, counted so
            rows.append(
                {
                    "a": player,
                    "b": member.spec,
                    "games": 0,
                    "win_rate": 0.5,
                    "win_rate_ci95": 0.0,
                    "score_diff": 0.0,
                    "score_diff_ci": 0.0,
                    "seconds": 0.0,
                    "member": member.name,
                    "kind": SELF,
                }
            )  # that every player's score is over the same members
            if on_row is not None:
                on_row(rows[-1])
            continue
        row = match_row(game, player, member.spec, games, seed, value_fn, member_target_ci, on_step=on_step)
        row.update(member=member.name, kind=member.kind)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows


def population_summary(rows: list[dict]) -> dict:
    """The population score (the mean of the scored rows' ``score_diff``, equal weights: every row
    but the floors'), its 95% CI (independent matches: sqrt(sum ci_i^2) / n) and the worst member
    (the lowest ``score_diff`` of another scored player)."""
    scored = [r for r in rows if r.get("kind") != FLOOR]
    if not scored:
        raise ValueError("a population summary needs at least one scored member's row")
    n = len(scored)
    others = [r for r in scored if r.get("kind") != SELF] or scored  # the player itself is no opponent to be worst at
    worst = min(others, key=lambda r: r["score_diff"])
    return {
        "population_score": sum(r["score_diff"] for r in scored) / n,
        "population_ci": math.sqrt(sum(r["score_diff_ci"] ** 2 for r in scored)) / n,
        "member_count": n,
        "floors": [r["member"] for r in rows if r.get("kind") == FLOOR],
        "worst_member": worst["member"],
        "worst_score_diff": worst["score_diff"],
        "worst_score_diff_ci": worst["score_diff_ci"],
    }


def record_summary(members: dict[str, list]) -> dict:
    """``population_summary`` of a record's ``members`` (``{name: [score diff, CI, games]}``, as
    ``population_record`` writes them), under this version's scoring: a record of version 1 holds
    the floors' margins too, and they are left out here; a member of 0 games is the player itself."""
    rows = [
        {
            "member": name,
            "score_diff": v[0],
            "score_diff_ci": v[1],
            "kind": FLOOR if name in FLOOR_BOTS else SELF if v[2] == 0 else "member",
        }
        for name, v in members.items()
    ]
    return population_summary(rows)


def member_target(target_ci: float | None, members: int) -> float | None:
    """The CI each member's match plays to so that the population score's CI is at most
    ``target_ci`` (the mean of ``members`` independent estimates: target * sqrt(members))."""
    return None if target_ci is None else target_ci * math.sqrt(max(1, members))


def population_markdown(player: str, rows: list[dict], summary: dict) -> str:
    """The table as Markdown: a row per member, then the population score and the worst member."""
    lines = [
        f"Population v{POPULATION_VERSION}: `{player}` against {summary['member_count']} scored members"
        + (f" and the floors {', '.join(summary['floors'])} (played, not scored)" if summary.get("floors") else "")
        + " (score difference: the luck-corrected estimate where measured; 95% CIs).",
        "",
        "| member | games | score diff | win rate |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| `{r['member']}`{' (floor)' if r.get('kind') == FLOOR else ''} | {r['games']} | "
            f"{r['score_diff']:+.2f} +- {r['score_diff_ci']:.2f} | "
            f"{100 * r['win_rate']:.1f}% +- {100 * r['win_rate_ci95']:.1f} |"
        )
    lines += [
        f"| **population score** | | **{summary['population_score']:+.2f} +- {summary['population_ci']:.2f}** | |",
        "",
        f"Worst member: `{summary['worst_member']}`, {summary['worst_score_diff']:+.2f} +- "
        f"{summary['worst_score_diff_ci']:.2f}.",
    ]
    return "\n".join(lines)


def population_record(
    game,
    player: str,
    games: int,
    seed: int,
    value_fn=None,
    target_ci: float | None = None,
    on_row: Callable[[dict], None] | None = None,
) -> dict:
    """``player`` against every member that plays ``game``, as a record (the card's
    ``population``, a line of docs/log/population_curve.jsonl): the version, the games a member
    and the seed, the summary (``population_summary``), each member's ``[score diff, CI, games]``
    and the members skipped."""
    members, skipped = population_members(game, player)
    start = time.perf_counter()
    rows = population_rows(
        game, player, members, games, seed, value_fn, member_target(target_ci, len(members)), on_row=on_row
    )
    return {
        "population_version": POPULATION_VERSION,
        "seed": seed,
        "games": games,
        "corrected": value_fn is not None,
        "seconds": round(time.perf_counter() - start, 1),
        **population_summary(rows),
        "members": {r["member"]: [round(r["score_diff"], 3), round(r["score_diff_ci"], 3), r["games"]] for r in rows},
        "skipped": [s["member"] for s in skipped],
    }


__all__ = [
    "population_record",
    "POPULATION_VERSION",
    "POPULATION_BOTS",
    "PAST_CHAMPIONS_DIR",
    "SAMPLED_CHAMPION_ROUND",
    "FLOOR",
    "FLOOR_BOTS",
    "Member",
    "past_champion_files",
    "population_specs",
    "population_members",
    "same_player",
    "player_identity",
    "population_rows",
    "population_summary",
    "record_summary",
    "member_target",
    "population_markdown",
]
