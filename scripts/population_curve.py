"""The population score of every shipped champion by round (issue 65): each round's network,
taken from the commit that shipped it, played greedy against the benchmark population
(players/population.py) on the same paired deals, luck-corrected.

    .venv/bin/python scripts/population_curve.py --rounds 1 7 13 19 --games 2000 --out docs/log/population_curve.jsonl

One JSON line per round is appended to --out as it ends (a killed run goes on where it stopped:
rounds already there are skipped); --markdown prints the table of what --out holds; --redecide
OUT replays the champion's history under the gate that asks everyone (improve/gate.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAMPION_PATH = "src/deepcfr/players/champion/lost_cities.pt"
# The commit that shipped each round's champion (git log -- CHAMPION_PATH); round 1 is also the
# fixed reference network (reference/lost_cities_one_round.pt).
SHIPPED = {
    1: "423fdca",
    3: "d81a343",
    4: "d23558e",
    5: "c23146a",
    7: "0d517f7",
    8: "443c788",
    9: "b9dd27c",
    10: "2776393",
    11: "e419cc5",
    12: "99a35be",
    13: "2bbee3b",
    15: "35db586",
    17: "3d0f47e",
    18: "c15fae1",
    19: "9d3ff4d",
}


def round_file(round_: int, directory: Path) -> Path:
    """Round ``round_``'s champion network, written from its commit into ``directory``."""
    if round_ not in SHIPPED:
        raise SystemExit(f"no shipped champion of round {round_}; shipped rounds: {sorted(SHIPPED)}")
    out = directory / f"round_{round_:02d}.pt"
    data = subprocess.run(
        ["git", "show", f"{SHIPPED[round_]}:{CHAMPION_PATH}"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    out.write_bytes(data)
    return out


def measure(round_: int, file: Path, games: int, seed: int, target_ci: float | None) -> dict:
    from deepcfr.games.lost_cities import LostCitiesGame
    from deepcfr.players.population import population_record
    from deepcfr.players.shipped import shipped_value_function

    def shown(row):
        print(
            f"  round {round_} vs {row['member']}: {row['score_diff']:+.2f} +- {row['score_diff_ci']:.2f} "
            f"({row['games']} games, {row['seconds']:.0f}s)",
            file=sys.stderr,
            flush=True,
        )

    game = LostCitiesGame()
    record = population_record(game, f"{file}@greedy", games, seed, shipped_value_function(game), target_ci, shown)
    return {"round": round_, "commit": SHIPPED[round_], **record}


def scored_members(margins) -> set[str]:
    """The members of a record that count in the population score (the floors do not)."""
    from deepcfr.players.population import FLOOR_BOTS

    return {name for name in margins if name not in FLOOR_BOTS}


def markdown(lines: list[dict]) -> str:
    from deepcfr.players.population import record_summary

    members = list(lines[0]["members"]) if lines else []
    head = "| round | population score | worst member | " + " | ".join(f"`{m}`" for m in members) + " |"
    out = [head, "|" + " ---: |" * (3 + len(members))]
    for line in sorted(lines, key=lambda x: x["round"]):
        cells = [f"{line['members'][m][0]:+.1f}" if m in line["members"] else "-" for m in members]
        summary = record_summary(line["members"])
        out.append(
            f"| {line['round']} | {summary['population_score']:+.2f} +- {summary['population_ci']:.2f} | "
            f"`{summary['worst_member']}` {summary['worst_score_diff']:+.1f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out)


def redecide(lines: list[dict], games: int, seed: int, alpha: float = 0.05, played: dict | None = None) -> list[dict]:
    """The champion the gate that asks everyone (improve/gate.py) would have kept: from the first
    round of ``lines``, each later round against the one kept so far, head to head (greedy,
    ``games`` paired games, luck-corrected; ``played``: matches already played, by (round, against))
    and on its population margins (the scored members)."""
    from deepcfr.games.lost_cities import LostCitiesGame
    from deepcfr.improve.gate import population_verdict
    from deepcfr.players.shipped import shipped_value_function
    from deepcfr.players.strength import match_row

    game, by_round = LostCitiesGame(), {line["round"]: line for line in lines}
    rounds = sorted(by_round)
    decisions, kept = [], rounds[0]
    with tempfile.TemporaryDirectory() as tmp:
        files = {r: round_file(r, Path(tmp)) for r in rounds}
        value_fn = shipped_value_function(game)
        for r in rounds[1:]:
            row = (played or {}).get((r, kept)) or match_row(
                game, f"{files[r]}@greedy", f"{files[kept]}@greedy", games, seed + r, value_fn
            )
            margins = {name: tuple(v[:2]) for name, v in by_round[r]["members"].items()}
            current = {name: tuple(v[:2]) for name, v in by_round[kept]["members"].items()}
            accepted, figures = population_verdict(
                (row["score_diff"], row["score_diff_ci"]), margins, current, alpha, scored=scored_members(margins)
            )
            decisions.append(
                {
                    "round": r,
                    "against": kept,
                    "h2h_games": games,
                    "head_to_head": round(row["score_diff"], 3),
                    "head_to_head_ci": round(row["score_diff_ci"], 3),
                    "accepted": accepted,
                    **{k.removeprefix("gate/"): v for k, v in figures.items() if "/member/" not in k},
                }
            )
            print(
                f"round {r} against round {kept}: head to head {row['score_diff']:+.2f} +- {row['score_diff_ci']:.2f}, "
                f"population rise {figures['gate/population_rise']:+.2f} +- "
                f"{figures['gate/population_rise_ci95']:.2f}, "
                f"closest to falling {figures['gate/closest_to_falling']} "
                f"{figures['gate/closest_to_falling_diff']:+.2f}"
                f" +- {figures['gate/closest_to_falling_ci95']:.2f}: {'accepted' if accepted else 'rejected'}",
                flush=True,
            )
            if accepted:
                kept = r
    return decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="*", default=[1, 7, 9, 11, 13, 15, 17, 19])
    parser.add_argument("--games", type=int, default=2000, help="games per member (the most, with --target-ci)")
    parser.add_argument("--target-ci", type=float, default=None, help="the population score's 95%% CI to stop at")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "log" / "population_curve.jsonl")
    parser.add_argument("--markdown", action="store_true", help="print the table of what --out holds and stop")
    parser.add_argument(
        "--redecide",
        type=Path,
        default=None,
        metavar="OUT",
        help="apply the gate that asks everyone to the rounds --out holds, in order (head to head: "
        "--h2h-games), write its decisions to OUT (JSON lines) and stop",
    )
    parser.add_argument("--h2h-games", type=int, default=10000, help="with --redecide: head-to-head games per round")
    args = parser.parse_args()
    done = [json.loads(x) for x in args.out.read_text().splitlines()] if args.out.is_file() else []
    if args.markdown:
        print(markdown(done))
        return 0
    if args.redecide is not None:
        # head-to-head matches already in OUT (same games) are reused: the gate's rule changes, not the games
        earlier = [json.loads(x) for x in args.redecide.read_text().splitlines()] if args.redecide.is_file() else []
        played = {
            (d["round"], d["against"]): {"score_diff": d["head_to_head"], "score_diff_ci": d["head_to_head_ci"]}
            for d in earlier
            if d.get("h2h_games", args.h2h_games) == args.h2h_games
        }
        decisions = redecide(
            [d for d in done if d["games"] == args.games and d["seed"] == args.seed],
            args.h2h_games,
            args.seed,
            played=played,
        )
        args.redecide.write_text("".join(json.dumps(d) + "\n" for d in decisions))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in args.rounds:
            if any(d["round"] == round_ and d["games"] == args.games and d["seed"] == args.seed for d in done):
                continue
            line = measure(round_, round_file(round_, Path(tmp)), args.games, args.seed, args.target_ci)
            with open(args.out, "a") as f:
                f.write(json.dumps(line) + "\n")
            print(
                f"round {round_}: population score {line['population_score']:+.2f} +- {line['population_ci']:.2f}, "
                f"worst {line['worst_member']} {line['worst_score_diff']:+.2f} ({line['seconds']:.0f}s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
