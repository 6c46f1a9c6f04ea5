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
    "strength": "strength_cmd",
    "exploit": "exploit_cmd",
    "play": "play_cmd",
    "replay": "replay_cmd",
    "report": "report_cmd",
    "serve": "serve_cmd",
    "export": "export_cmd",
    "build-web": "build_web_cmd",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deepcfr", description="Batched Deep CFR for card games.")
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
