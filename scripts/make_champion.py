"""Rebuild the shipped champion from a fresh clone, and write its model card (``make champion``).

1. one round of expert iteration, ``deepcfr improve --config lost_cities/improve.yaml``, with no
   start network: its bot teacher plays both seats and the student starts fresh, so a Deep CFR
   checkpoint would change nothing (tests/test_improve.py checks that the positions and the
   network are the same with one);
2. rounds of ``lost_cities/grow.yaml`` from that network (the growing teacher: the learner in its
   own rollouts; each new network gated head to head against the current one, as the shipped
   rounds were), in the stages the shipped campaign ran in (SHIPPED_STAGES: a run of 4 rounds, a
   run of 1 from its network, both with the settings grow.yaml had then, two runs of 1 with the
   teacher's rollouts played to the end, two runs of 1 with 3 candidates in its teacher's search,
   two runs of 1 with the uniform-deal teacher and one with 144 deals in its teacher's search, to
   round 13: the rounds after it won head to head and lowered the population score; then a run of
   5 rounds of self-play against a league (the learner, the population, the last champions),
   gated by the population; then two runs of one round whose teacher plans two of its own turns:
   docs/log/population.md). Each run starts from the network of the one before and with no
   positions, as a campaign that goes on from a shipped network does, but the planner's, which
   also train on the kept positions of the run before, as they ran;
3. the distilled network exported into the package (``deepcfr.players.shipped``);
4. its figures: the network alone (greedy) and the search over it (SEARCH_SETTINGS, which
   ``search:champion`` plays) against every bot, and the search against the network alone head
   to head (what the search adds), on paired deals with 95% CIs, written with the commands,
   seeds, commit and hash into card.json and CARD.md (with the exploitability figure of the
   previous card where the file is the same one it was measured on).

  python scripts/make_champion.py                     # the shipped recipe (see card.json's commands)
  python scripts/make_champion.py --evaluate-only     # only step 4, for the file already there
  python scripts/make_champion.py --variant mini --quick --out DIR --work DIR   # the recipe in seconds (tests)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

from deepcfr.players.shipped import (
    CARD_FILE,
    CHAMPION_FILE,
    HERE,
    champion_card_of,
    export_champion,
    write_champion_card,
)

ROOT = Path(__file__).resolve().parent.parent

# grow.yaml's teacher for the shipped campaign's first eight rounds: rollouts to the end of the
# game (today's cuts them after 4 decisions and values the rest with the shipped value function;
# docs/log/results.md, "The search cut short by the value function")
FULL_ROLLOUT_TEACHER = ["improve.teacher=search[candidates=3,rollout_policy=base]:learner"]
# the shipped campaign's rounds 1-13 were gated head to head alone (today's grow.yaml also asks the
# benchmark population: improve/gate.py); a stage without it is gated as grow.yaml says
HEAD_TO_HEAD_GATE = ["improve.gate_population_games=0"]
# grow.yaml's settings for the shipped campaign's first five rounds (today's: colder targets,
# trained longer, a 10,000-game gate; docs/log/results.md, "Round 6 again, and distillation settings" and
# "Round 7: colder targets trained longer")
FIRST_GROW_SETTINGS = [
    "improve.temperature=5",
    "improve.train_steps=12000",
    "improve.gate_games=2000",
] + FULL_ROLLOUT_TEACHER
# grow.yaml's teacher for rounds 9 and 10: rollouts cut after 4 decisions, 3 candidates (today's
# has 5: head to head over round 9 they beat 3 by +2.4 a game; docs/log/results.md, "Round 10")
CUT_ROLLOUT_K3_TEACHER = ["improve.teacher=search[candidates=3,rollout_policy=base,rollout_plies=4]:learner"]
# rounds 13, 15, 17 and 18 skipped the round's evaluation, as they ran (rounds 14 and 16, rejected at
# their gates, are not stages: a rejected round leaves the network as it was; round 15 ran today's
# grow.yaml)
NO_EVALUATION = ["improve.eval_games=0"]
# grow.yaml's teacher with three times its deals, for rounds 13 and 17 (the 48-deal rounds before
# them were rejected; docs/log/results.md, "Round 13 again" and "Round 17")
DEALS_144_TEACHER = [
    "improve.teacher=search[candidates=5,rollout_policy=base,rollout_plies=4,determinizations=144]:learner",
    *NO_EVALUATION,
]
# grow.yaml's teacher for rounds 11-17, dealing the hidden cards uniformly (today's deals the
# opponent's by the hand belief shipped beside the champion; docs/log/results.md, "Round 18")
UNIFORM_DEALS_TEACHER = ["improve.teacher=search[candidates=5,rollout_policy=base,rollout_plies=4]:learner"]
# the league run from round 13: self-play batches against the learner, the population's scored members
# and the last 3 champions (3:2:1), each round gated by the population at 1000 games a member and one
# labelling worker, as it ran (docs/log/population.md,
# "The league rounds rebuilt with today's code: the champion")
LEAGUE = [
    "improve.opponents={self: 3, population: 2, past: 1}",
    "improve.past_window=3",
    "improve.num_workers=1",
    "improve.gate_population_games=1000",
    *NO_EVALUATION,
]
# a round after the league run (issue 66): the teacher plans two of its own turns (48 worlds from
# the hand belief), the league's opponents, gated by the population at the default 2000 games a member,
# training also on the positions the run before kept, as it ran (``{previous}``: the stage before's
# checkpoint: the league run's for the first, the first planner run's for the second;
# docs/log/population.md, "League rounds 6-9, and a round taught by the planner: the champion" and
# "A second round taught by the planner: the champion")
PLANNER_TEACHER = [
    "improve.teacher=search[candidates=5,belief=learned,plan_depth=2,determinizations=48,rollout_plies=2,"
    "plan_min_prior=0.02]:learner",
    "improve.opponents={self: 3, population: 2, past: 1}",
    "improve.past_window=3",
    "improve.num_workers=1",
    "improve.positions_from=[{previous}]",
    *NO_EVALUATION,
]
# the shipped champion's runs of lost_cities/grow.yaml: (rounds, overrides) each: the runs to round 13,
# the round the gate that asks everyone kept (rounds 15-19 won head to head and lowered the population
# score: docs/log/population.md), each gated head to head as it ran, then the league run's five rounds
# (rounds 2 and 5 accepted by the population gate, 1, 3 and 4 rejected), then two runs of one round
# taught by the planner, each accepted by the population gate
SHIPPED_STAGES = [
    (4, HEAD_TO_HEAD_GATE + FIRST_GROW_SETTINGS),
    (1, HEAD_TO_HEAD_GATE + FIRST_GROW_SETTINGS),
    (1, HEAD_TO_HEAD_GATE + FULL_ROLLOUT_TEACHER),
    (1, HEAD_TO_HEAD_GATE + FULL_ROLLOUT_TEACHER),
    (1, HEAD_TO_HEAD_GATE + CUT_ROLLOUT_K3_TEACHER),
    (1, HEAD_TO_HEAD_GATE + CUT_ROLLOUT_K3_TEACHER),
    (1, HEAD_TO_HEAD_GATE + UNIFORM_DEALS_TEACHER),
    (1, HEAD_TO_HEAD_GATE + UNIFORM_DEALS_TEACHER),
    (1, HEAD_TO_HEAD_GATE + DEALS_144_TEACHER),
    (5, LEAGUE),
    (1, PLANNER_TEACHER),
    (1, PLANNER_TEACHER),
]
# the search settings measured strongest over the champion (docs/log/results.md, "A teacher that
# grows", "The search cut short by the value function" and "Round 10"): the network plays its
# own rollouts, cut after 4 decisions and valued by the value function shipped beside it, over
# its 5 most probable moves (5 beat 3 head to head by +2.4 a game at 1.6 times the time);
# search:champion starts from them (its card)
# belief=learned: the opponent's unknown cards dealt by the hand belief shipped beside the champion
# (HAND.md): head to head over round 17 +3.3 against +1.2 for uniform deals on the same 1000 deals
# (docs/log/results.md, "A learned belief of the opponent's hand")
SEARCH_SETTINGS = {"candidates": 5, "rollout_policy": "base", "rollout_plies": 4, "belief": "learned"}
BOTS = ["heuristic_balanced", "heuristic_careful", "heuristic_aggressive", "discard_only", "random"]
QUICK_IMPROVE = [
    "network.hidden_size=16",
    "improve.games_per_round=4",
    "improve.batch_games=2",
    "improve.train_steps=20",
    "improve.batch_size=32",
    "improve.gate_games=20",
    "improve.eval_games=0",
    "improve.executor=inline",
    "improve.teacher=search[determinizations=2]:heuristic_balanced",
]
QUICK_GROW = [o for o in QUICK_IMPROVE if not o.startswith(("network.", "improve.teacher="))] + [
    "improve.eval_opponents=[heuristic_balanced]",
    "improve.teacher=search[determinizations=2,rollout_policy=base]:learner",
]


def deepcfr(*args: str) -> list[str]:
    return [sys.executable, "-m", "deepcfr.cli.main", *args]


def run(command: list[str]) -> None:
    print("+", " ".join(command[2:] if command[1] == "-m" else command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def recipe(
    variant: str, quick: bool, work: Path, grow_stages: list[tuple[int, list[str]]]
) -> tuple[list[list[str]], list[Path]]:
    """The recipe's commands and the improvement checkpoints its runs leave (the last one is the
    champion's); ``grow_stages``: each growing run's rounds and its overrides of grow.yaml."""
    improve = [
        "improve",
        "--config",
        "lost_cities/improve.yaml",
        "--set",
        "improve.eval_search=null",
        "--run-dir",
        str(work / "improve"),
    ]
    if variant != "classic":
        improve += ["--set", f"game.variant={variant}"]
    if quick:
        for override in QUICK_IMPROVE:
            improve += ["--set", override]
    commands, checkpoints = [improve], [work / "improve" / "checkpoints" / "latest.pt"]
    for stage, (rounds, overrides) in enumerate(grow_stages):
        run_dir = work / ("grow" if stage == 0 else f"grow{stage + 1}")
        grow = [
            "improve",
            "--checkpoint",
            str(checkpoints[-1]),
            "--config",
            "lost_cities/grow.yaml",
            "--rounds",
            str(rounds),
            "--run-dir",
            str(run_dir),
        ]
        for override in overrides + (QUICK_GROW if quick else []):
            grow += ["--set", override.replace("{previous}", str(checkpoints[-1]))]
        commands.append(grow)
        checkpoints.append(run_dir / "checkpoints" / "latest.pt")
    return commands, checkpoints


def search_settings(value_fn, hand_belief) -> dict:
    """SEARCH_SETTINGS where the game has a shipped value function and hand belief (classic rules),
    else without the cut rollouts and the learned belief that need them (the mini recipe's test)."""
    needs = {"rollout_plies": value_fn, "belief": hand_belief}
    return {k: v for k, v in SEARCH_SETTINGS.items() if needs.get(k, True) is not None}


def evaluate(
    champion: Path, variant: str, network_games: int, search_games: int, head_to_head_games: int, seed: int
) -> tuple[dict, dict]:
    """The network alone (greedy) and the search over it (``search_settings``) against every bot,
    and the search against the network alone (``search_vs_network``); and the search settings."""
    from deepcfr.cli.common import make_named_game
    from deepcfr.players.shipped import resolve_hand_belief, resolve_value_function
    from deepcfr.players.strength import match_row

    game = make_named_game(None, variant)
    value = resolve_value_function("auto", game)  # the corrected estimate beside the plain one, where shipped
    figures: dict[str, dict] = {"network": {}, "search": {}}
    settings = search_settings(value, resolve_hand_belief("auto", game))
    searched = f"search[{','.join(f'{k}={v}' for k, v in settings.items())}]:{champion}"
    for kind, spec, games in (("network", f"{champion}@greedy", network_games), ("search", searched, search_games)):
        for i, bot in enumerate(BOTS):
            start = time.perf_counter()
            # the search's games cost seconds each: the bots it beats by a mile get fewer
            r = match_row(
                game,
                spec,
                bot,
                games if kind == "network" or bot.startswith("heuristic") else min(games, 100),
                seed,
                value,
            )
            figures[kind][bot] = {
                k: r[k]
                for k in (
                    "games",
                    "win_rate",
                    "win_rate_ci95",
                    "mean_score_diff",
                    "score_diff_ci95",
                    "mean_game_length",
                    "corrected_score_diff",
                    "corrected_ci95",
                    "variance_ratio",
                )
                if k in r
            }
            if kind == "search":
                figures[kind][bot]["seconds_per_move"] = r.get("seconds_per_searched_move")
            print(
                f"  {kind} vs {bot} ({i + 1}/{len(BOTS)}): "
                f"{100 * r['win_rate']:.1f}% +-{100 * r['win_rate_ci95']:.1f}, "
                f"{r['mean_score_diff']:+.1f} +-{r['score_diff_ci95']:.1f} ({time.perf_counter() - start:.0f}s)",
                flush=True,
            )
    if head_to_head_games:
        r = match_row(game, searched, f"{champion}@greedy", head_to_head_games, seed, value)
        figures["search_vs_network"] = {
            k: r[k]
            for k in (
                "games",
                "win_rate",
                "win_rate_ci95",
                "mean_score_diff",
                "score_diff_ci95",
                "corrected_score_diff",
                "corrected_ci95",
                "variance_ratio",
            )
            if k in r
        }
        figures["search_vs_network"]["seconds_per_move"] = r.get("seconds_per_searched_move")
        print(f"  search vs network: {r['score_diff']:+.2f} +-{r['score_diff_ci']:.2f}", flush=True)
    return figures, settings


def _shown(path: Path) -> str:
    """``path`` relative to the repository root where it is inside it (as the card shows commands)."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def keep_file_findings(card: dict, previous: dict) -> None:
    """What the previous card found on this very file (the same sha256), which no evaluation here
    measures again: its exploitability and the gate's verdict that made it the champion."""
    if previous.get("sha256") != card["sha256"]:
        return
    if previous.get("exploitability"):
        card["exploitability"] = previous["exploitability"]
    verdict = previous.get("population", {}).get("verdict")
    if verdict and card.get("population"):
        card["population"]["verdict"] = verdict


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", default="classic")
    p.add_argument("--quick", action="store_true", help="tiny settings (a test of the recipe, not a champion)")
    p.add_argument("--work", default="runs/champion", help="run directories (relative: to the repository root)")
    p.add_argument("--out", default=str(HERE), help="where the champion file and its card go")
    p.add_argument(
        "--evaluate-only", action="store_true", help="only measure the file already in --out and write the card"
    )
    p.add_argument(
        "--made-by-recipe",
        action="store_true",
        help="with --evaluate-only: the file was made by this recipe's commands (run in pieces, or on "
        "another machine), so the card names them instead of the previous card's",
    )
    p.add_argument(
        "--grow-rounds",
        help="rounds of lost_cities/grow.yaml as it is after the bot round, one run per comma-separated "
        "count, each from the network of the one before and gated head to head as the shipped rounds "
        "were (default: the shipped champion's runs, "
        f"{','.join(str(n) for n, _ in SHIPPED_STAGES)}, with the settings each ran with; 0: none)",
    )
    p.add_argument("--network-games", type=int, default=2000)
    p.add_argument("--search-games", type=int, default=400)
    p.add_argument(
        "--head-to-head-games", type=int, default=2000, help="games of the search against the network alone (0: none)"
    )
    p.add_argument(
        "--population-games",
        type=int,
        default=2000,
        help="games of the network alone against each member of the benchmark population (0: none)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--machine", default="a shared 2-core AMD EPYC CPU, one torch thread")
    args = p.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    file = out / CHAMPION_FILE.name
    try:
        grow_stages = (
            SHIPPED_STAGES
            if args.grow_rounds is None
            else [(int(n), HEAD_TO_HEAD_GATE) for n in args.grow_rounds.split(",") if int(n) > 0]
        )
    except ValueError:
        p.error(f"--grow-rounds: comma-separated round counts, e.g. 4,3 (got {args.grow_rounds!r})")
    commands, checkpoints = recipe(args.variant, args.quick, work, grow_stages)  # paths as run in ROOT
    improved = checkpoints[-1]
    made = [ROOT / ck for ck in checkpoints]  # the same files, to load here wherever this runs from
    previous = json.loads((out / CARD_FILE.name).read_text()) if (out / CARD_FILE.name).is_file() else {}
    if not args.evaluate_only:
        for command in commands:
            run(deepcfr(*command))
        export_champion(made[-1], file)
        file.chmod(0o644)
    commands = [["deepcfr", *c] for c in commands] + [
        [
            "python",
            "-c",
            f'\'from deepcfr.players.shipped import export_champion; export_champion("{improved}", "{_shown(file)}")\'',
        ]
    ]
    keep_provenance = args.evaluate_only and previous and not args.made_by_recipe
    if keep_provenance:
        commands = previous["commands"]  # what made the file
    from deepcfr.checkpoints import load_checkpoint, network_meta
    from deepcfr.improve.config import ImproveRunConfig
    from deepcfr.train.agent import load_agent

    agent = load_agent(str(file), config_class=ImproveRunConfig)
    if keep_provenance:
        rounds, teachers = previous["improve_rounds"], previous["teacher"]
    elif args.evaluate_only:  # made by the recipe's commands elsewhere: its rounds and teachers
        rounds = 1 + sum(n for n, _ in grow_stages)
        teachers = previous.get("teacher", [])[:1] + (agent.config.improve.teachers() if grow_stages else [])
    else:  # the bot round, then each growing run's rounds
        rounds = 1 + sum(int(load_checkpoint(str(ck), map_location="cpu")["improve"]["round"]) for ck in made[1:])
        teachers = [load_agent(str(made[0]), config_class=ImproveRunConfig).config.improve.teacher_of(1)]
        teachers += agent.config.improve.teachers() if grow_stages else []
    print(
        f"evaluating {file} ({args.network_games} games for the network, {args.search_games} for the search)",
        flush=True,
    )
    figures, settings = evaluate(
        file, args.variant, args.network_games, args.search_games, args.head_to_head_games, args.seed
    )
    net, search = figures["network"]["heuristic_balanced"], figures["search"]["heuristic_balanced"]
    card = champion_card_of(
        file,
        summary=f"the network alone {100 * net['win_rate']:.1f}% ({net['mean_score_diff']:+.1f}), the search over it "
        f"{100 * search['win_rate']:.1f}% ({search['mean_score_diff']:+.1f}) against heuristic_balanced",
        game=agent.game.name,
        rules=agent.game.config_dict(),
        rules_variant=args.variant,
        network=network_meta(agent.config, agent.game),
        improve_rounds=rounds,
        run_seed=int(agent.config.run.seed),
        eval_seed=args.seed,
        teacher=teachers,
        commands=commands,
        search_settings=settings,
        recipe_note=previous.get(
            "recipe_note",
            "With a bot teacher on both seats the round never consults a start "
            "network and the student starts fresh, so no Deep CFR checkpoint is needed.",
        ),
        commit=commit(),
        date=dt.date.today().isoformat(),
        machine=args.machine,
        figures=figures,
    )
    if args.population_games:  # the card's headline: the network alone against the benchmark population
        from deepcfr.cli.common import make_named_game
        from deepcfr.players.population import population_record
        from deepcfr.players.shipped import resolve_value_function

        game = make_named_game(None, args.variant)
        card["population"] = population_record(
            game, f"{file}@greedy", args.population_games, args.seed, resolve_value_function("auto", game)
        )
        card["population"]["command"] = (
            f"deepcfr strength {_shown(file)} --population --games {args.population_games} --seed {args.seed}"
        )
    keep_file_findings(card, previous)
    written = write_champion_card(card, out)
    print(f"wrote {' and '.join(str(p) for p in written)}: {card['summary']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
