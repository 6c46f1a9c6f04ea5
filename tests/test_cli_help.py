"""The command line's help says what the code does: every game the registry knows is named in
each subcommand's ``--game`` help (a new game cannot be left out of one)."""

import argparse

from deepcfr.cli.main import build_parser
from deepcfr.games.registry import game_names


def _subcommands(parser: argparse.ArgumentParser, path=()):
    """(command path, parser) of every subcommand, nested ones (bench engine) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subcommands(sub, (*path, name))


def test_every_game_the_registry_knows_is_in_each_game_option_help():
    checked = []
    for path, parser in _subcommands(build_parser()):
        for action in parser._actions:
            if "--game" not in action.option_strings or action.type is int:  # replay --game K: a game of a file
                continue
            checked.append(" ".join(path))
            missing = [name for name in game_names() if name not in (action.help or "")]
            assert not missing, f"deepcfr {' '.join(path)} --game's help leaves out {missing}: {action.help!r}"
    assert {"arena", "bench engine", "exploit", "exploitability", "fit-value", "play"} <= set(checked)
