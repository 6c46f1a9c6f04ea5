"""``deepcfr eval``: evaluate a checkpoint's policy: batched matches against bots (paired deals,
both seat orders) and, for Kuhn and Leduc, exact exploitability."""

from __future__ import annotations

from .common import add_json_flag, add_search_options, add_value_option, emit, search_settings, value_function


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
        "--vs",
        default=None,
        help="comma-separated opponents, player specs (bots, champion, checkpoints, search:SPEC), or 'self' "
        "(the checkpoint's own policy, sampled) (default for Lost Cities: heuristic_careful,random,discard_only; "
        "for poker: random)",
    )
    p.add_argument("--games", type=int, default=500, help="games per opponent, even (games/2 deals)")
    p.add_argument(
        "--policy",
        choices=["average", "current", "mixture"],
        default="average",
        help="average: the strategy network; current: regret matching on the advantage networks; "
        "mixture (Kuhn/Leduc): the exact average of the sigma_t played",
    )
    p.add_argument("--greedy", action="store_true", help="play the most probable action instead of sampling")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and sampling")
    p.add_argument("--device", default="cpu", help="torch device to play on")
    p.add_argument(
        "--search",
        action="store_true",
        help="also evaluate rollout search over the policy (Lost Cities; settings: --search-*)",
    )
    p.add_argument(
        "--sweep",
        default=None,
        metavar="KEY=V1,V2,...",
        help="with --search: one search agent per value of this search setting, e.g. --sweep determinizations=16,32,64",
    )
    add_search_options(p)
    add_value_option(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def _opponent_specs(game, vs: str | None) -> list[str]:
    from ..games.bots import evaluation_opponents
    from ..players import parse_player, split_specs

    names = evaluation_opponents(game) if vs is None else split_specs(vs)
    if not names:
        raise ValueError("--vs needs at least one opponent (a player spec, or self)")
    for n in names:
        if n != SELF:
            parse_player(n)  # a bad spec fails before any game is played
    return names


SELF = "self"


def _sweep(text: str | None) -> list[dict]:
    """Search settings per point of ``--sweep KEY=V1,V2,...`` ([{}] without a sweep)."""
    if text is None:
        return [{}]
    from ..players import parse_setting_value

    key, eq, values = text.partition("=")
    if not eq or not key.strip() or not values.strip():
        raise ValueError(f"--sweep {text!r} must look like KEY=V1,V2,... (e.g. determinizations=16,32)")
    return [{key.strip(): parse_setting_value(v, f"--sweep {key.strip()}")} for v in values.split(",") if v.strip()]


def run(args) -> int:
    from pathlib import Path

    from ..checkpoints import CheckpointError
    from ..evaluate.arena import play_match
    from ..players import load_player
    from ..train.agent import load_agent

    if args.games < 2 or args.games % 2:
        raise ValueError(f"--games must be a positive even number (paired deals), got {args.games}")
    path = Path(args.checkpoint)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    agent = load_agent(str(path), device=args.device)
    game = agent.game
    opponents = _opponent_specs(game, args.vs)
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
    from ..players import NetworkPlayer

    own = NetworkPlayer.of_agent(agent, args.policy, False, str(path)) if args.policy != "mixture" else policy
    built: dict[str, object] = {}

    def opponent(name):  # 'self': the evaluated policy, sampled; built once per spec
        if name == SELF:
            return own
        if name not in built:
            built[name] = load_player(name, game, args.device, search_settings(args))
        return built[name]

    value_fn = value_function(args, game)
    for name in opponents:
        result = play_match(
            game,
            policy,
            opponent(name),
            games=args.games,
            seed=args.seed,
            device=args.device,
            value_fn=value_fn,
            target_ci95=args.target_ci,
        )
        out[f"{name}_win_rate_ci95"] = result.win_rate_ci95
        out.update({f"{name}_{k}": v for k, v in result.figures().items()})  # with the farming diagnostics
    if args.sweep is not None and not args.search:
        raise ValueError("--sweep needs --search")
    if args.search:
        out["search"] = _search_points(args, agent, game, opponent, opponents)
    emit(out, args.json, title=f"eval: {path}")
    return 0


def _search_points(args, agent, game, opponent, opponents) -> list[dict]:
    """One entry per search setting: its settings, and per opponent win rate and mean score
    difference with 95% CIs, rollout decisions per second, seconds per move, capped rollouts."""
    from ..evaluate.arena import play_match
    from ..players import NetworkPlayer, search_player

    if args.policy == "mixture":
        raise ValueError("--search searches over a network policy (average or current), not the mixture")
    import sys
    import time

    base = NetworkPlayer.of_agent(agent, args.policy, args.greedy, str(args.checkpoint))
    points = []
    sweep = _sweep(args.sweep)
    total, done, start = len(sweep) * len(opponents), 0, time.perf_counter()
    for extra in sweep:
        point: dict = {}
        for name in opponents:
            elapsed = time.perf_counter() - start
            eta = f", ETA {elapsed / done * (total - done):.0f}s" if done else ""
            print(
                f"search matches {done}/{total}: {extra or 'defaults'} vs {name} next ({elapsed:.0f}s{eta})",
                file=sys.stderr,
                flush=True,
            )
            done += 1
            player = search_player(base, f"search:{args.checkpoint}", args.device, search_settings(args), extra)
            point.setdefault("settings", player.search.config.model_dump())
            result = play_match(game, player, opponent(name), games=args.games, seed=args.seed, device=args.device)
            stats = player.stats.to_dict()
            point[name] = {
                "win_rate": result.win_rate,
                "win_rate_ci95": result.win_rate_ci95,
                "mean_score_diff": result.mean_score_diff,
                "score_diff_ci95": result.score_diff_ci95,
                "rollout_decisions_per_second": stats["rollout_decisions_per_second"],
                "seconds_per_move": stats["seconds_per_move"],
                "capped_rollouts": stats["capped_rollouts"],
                "rollouts": stats["rollouts"],
                "cut_off_games": result.cut_off_games,
            }
        points.append(point)
    return points
