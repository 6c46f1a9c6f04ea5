"""``deepcfr eval``: evaluate a checkpoint's policy: batched matches against bots (paired deals,
both seat orders) and, for Kuhn and Leduc, exact exploitability."""

from __future__ import annotations

from .common import add_json_flag, emit

DEFAULT_OPPONENTS = {"lost_cities": ["heuristic_careful", "random", "discard_only"]}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate a checkpoint against bots (and exploitability for Kuhn/Leduc)",
        description="Load a checkpoint and play its policy against each bot on paired deals (each "
        "deal in both seat orders), reporting win rate and mean score difference with a 95%% "
        "confidence interval per opponent; for Kuhn and Leduc also the exact exploitability of "
        "the average and current policies.",
    )
    p.add_argument("--checkpoint", required=True, help="checkpoint file (e.g. runs/<run>/checkpoints/latest.pt)")
    p.add_argument(
        "--vs", default=None,
        help="comma-separated bot names (default for Lost Cities: heuristic_careful,random,discard_only; "
        "for poker: random)",
    )
    p.add_argument("--games", type=int, default=500, help="games per opponent, even (games/2 deals)")
    p.add_argument("--policy", choices=["average", "current", "mixture"], default="average",
                   help="average: the strategy network; current: regret matching on the advantage networks; "
                   "mixture (Kuhn/Leduc): the exact average of the sigma_t played")
    p.add_argument("--greedy", action="store_true", help="play the most probable action instead of sampling")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and sampling")
    p.add_argument("--device", default="cpu", help="torch device to play on")
    add_json_flag(p)
    p.set_defaults(func=run)


def _opponents(game, vs: str | None) -> list[str]:
    from ..games.bots import bot_names

    if vs is None:
        names = DEFAULT_OPPONENTS.get(game.name, ["random"])
    else:
        names = [n.strip() for n in vs.split(",") if n.strip()]
        if not names:
            raise ValueError("--vs needs at least one bot name")
    valid = bot_names(game)
    for n in names:
        if n not in valid:
            raise ValueError(f"--vs: unknown bot {n!r} for {game.name}; valid bots: {', '.join(valid)}")
    return names


def run(args) -> int:
    from pathlib import Path

    from ..evaluate.arena import play_match
    from ..games.bots import make_bot
    from ..train.checkpoint import CheckpointError
    from ..train.agent import load_agent

    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number (paired deals), got {args.games}")
    path = Path(args.checkpoint)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    agent = load_agent(str(path), device=args.device)
    game = agent.game
    opponents = _opponents(game, args.vs)
    policy = agent.policy(kind=args.policy, greedy=args.greedy)

    out: dict = {
        "checkpoint": str(path),
        "game": game.name,
        "iteration": int(agent.iteration),
        "policy": args.policy,
        "greedy": bool(args.greedy),
        "games": args.games,
        "seed": args.seed,
    }
    from ..evaluate.exploitability import exploitability, supports_exploitability

    if supports_exploitability(game):
        # Both policies for Kuhn and Leduc (docs/design.md); `exploitability` is the chosen one.
        kinds = ["average", "current"] + (["mixture"] if getattr(agent, "exact_average", None) is not None else [])
        for kind in kinds:
            p = policy if kind == args.policy else agent.policy(kind=kind, greedy=args.greedy)
            out[f"{kind}_exploitability"] = exploitability(game, p, device=args.device).exploitability
        out["exploitability"] = out[f"{args.policy}_exploitability"]
    for name in opponents:
        result = play_match(game, policy, make_bot(game, name), games=args.games, seed=args.seed, device=args.device)
        out[f"{name}_win_rate"] = result.win_rate
        out[f"{name}_mean_score_diff"] = result.mean_score_diff
        out[f"{name}_score_diff_ci95"] = result.score_diff_ci95
        out[f"{name}_mean_game_length"] = result.mean_game_length
    emit(out, args.json, title=f"eval: {path}")
    return 0
