"""Output helpers shared by the subcommands: one JSON object with --json, a rich table otherwise."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        return _clean(v.item())
    return v


def emit(result: dict, as_json: bool, title: str | None = None) -> None:
    """Print ``result`` (flat snake_case figures) as exactly one JSON object, or as a table."""
    if as_json:
        print(json.dumps(_clean(result), sort_keys=False))
        return
    table = Table(title=title, show_header=True)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for k, v in result.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        table.add_row(k, str(v))
    Console().print(table)


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object with the figures")


# Search settings: --search-* options and --set search.key=value (one place for every command).
_SEARCH_OPTIONS = (
    ("determinizations", int, "hidden-card samples per decision (common to all candidates)"),
    ("candidates", int, "the base policy's top-k moves that are rolled out"),
    ("prior_weight", float, "weight of log pi(a) of a network base in the choice"),
    ("base_bonus", float, "points added to the base policy's own move"),
    ("min_z", float, "replace the base move only when the paired difference is above this many standard errors"),
    ("rollout_policy", str, "who plays the rollouts: base, or a bot name"),
    ("bot_prior", float, "weight of the rollout bot's move in the candidates' prior (network base)"),
    ("win_bonus", float, "points added to a won rollout (subtracted from a lost one)"),
    ("rollout", str, "greedy or sampled rollouts"),
    ("rollout_dtype", str, "float32, or bfloat16 (autocast) for a network's forward passes in the rollouts"),
    ("time_limit_s", float, "seconds per batch of decisions after which no new round of determinizations starts"),
    ("max_batch", int, "rollouts in flight at once (memory budget)"),
    ("seed", int, "seed of the determinizations and sampled rollouts"),
)


def add_search_options(parser) -> None:
    """``--search-KEY VALUE`` for every search setting, and ``--set search.KEY=VALUE``."""
    group = parser.add_argument_group("search settings (for search:SPEC players; defaults in deepcfr.search.SearchConfig)")
    for key, kind, text in _SEARCH_OPTIONS:
        group.add_argument(f"--search-{key.replace('_', '-')}", dest=f"search_{key}", type=kind, default=None, help=text)
    group.add_argument("--set", dest="search_overrides", action="append", default=[], metavar="search.KEY=VALUE",
                       help="a search setting, e.g. --set search.determinizations=64 (repeatable)")


def search_settings(args) -> dict:
    """The search settings given on the command line (validated when a search player is built)."""
    import yaml

    settings = {}
    for item in getattr(args, "search_overrides", []) or []:
        key, eq, value = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not eq or section != "search" or not dot or not name:
            raise ValueError(f"--set {item!r}: this command takes search settings only, as search.KEY=VALUE")
        settings[name] = yaml.safe_load(value) if value != "" else ""
    for key, _, _ in _SEARCH_OPTIONS:
        value = getattr(args, f"search_{key}", None)
        if value is not None:
            settings[key] = value
    return settings


def search_figures(player, prefix: str) -> dict:
    """Search statistics of a search player (empty for other players), keys prefixed."""
    stats = getattr(player, "stats", None)
    if stats is None:
        return {}
    out = {f"{prefix}{k}": v for k, v in stats.to_dict().items()}
    out.update({f"{prefix}search_{k}": v for k, v in player.search.config.model_dump().items()})
    return out
