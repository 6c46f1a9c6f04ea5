"""`deepcfr` command line. Each subcommand lives in its own module under deepcfr.cli with
``register(subparsers)`` (adds its parser and sets ``func``); they are imported lazily so that
``deepcfr --help`` stays fast."""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand name -> module under deepcfr.cli
COMMANDS = {
    "train": "train_cmd",
    "improve": "improve_cmd",
    "eval": "eval_cmd",
    "arena": "arena_cmd",
    "bench": "bench_cmd",
    "exploitability": "exploitability_cmd",
    "fit-value": "fit_value_cmd",
    "fit-belief": "fit_belief_cmd",
    "strength": "strength_cmd",
    "exploit": "exploit_cmd",
    "play": "play_cmd",
    "replay": "replay_cmd",
    "report": "report_cmd",
    "serve": "serve_cmd",
    "export": "export_cmd",
    "build-web": "build_web_cmd",
    "convert-checkpoint": "convert_cmd",
}


def version_text() -> str:
    """The package's version (pyproject.toml, its one place) and, per game, the version of its
    rules and observations (checkpoints check it) and of its network features where they have one."""
    from importlib.metadata import PackageNotFoundError, version

    from ..games.registry import game_names, make_game

    try:
        package = version("deepcfr")
    except PackageNotFoundError:  # run from a source tree that was never installed
        package = "unknown (not installed)"
    lines = [f"deepcfr {package}"]
    for name in game_names():
        game = make_game(name)
        encoding = getattr(getattr(game, "encoder", None), "version", None)
        lines.append(
            f"  {name}: rules and observations version {game.version}"
            + (f", encoding version {encoding}" if encoding is not None else "")
        )
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    """--version, computed only when asked (the games are not built for every command)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deepcfr",
        description="Deep CFR and expert iteration with search for imperfect-information card games. "
        "Docs: docs/README.md.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="the package version and each game's rules and encoding versions"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMANDS.values():
        importlib.import_module(f"deepcfr.cli.{module}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, KeyError) as e:
        # User errors (bad names, configs, checkpoints) end with one clear line, not a traceback.
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"deepcfr {args.command}: error: {msg}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
