"""The shipped champion: the strongest Lost Cities network measured, a small file inside the
package with its model card beside it (``champion/CARD.md`` for people, ``champion/card.json``
for code: the commands that made it, the commit, the file's hash, the rules, the network shape
and its measured figures). ``champion`` is a player spec like a checkpoint path
(``champion@greedy``, ``search:champion``); a network replaces it only by beating it head to head."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "champion"
CHAMPION_FILE = HERE / "lost_cities.pt"
CARD_FILE = HERE / "card.json"
# the value function of the full state the arena's luck corrections use (deepcfr fit-value; what
# it was trained on is in its own meta, ``trained_on``)
VALUE_FILE = HERE / "lost_cities_value.pt"


def champion_file() -> Path:
    """The shipped champion checkpoint (CheckpointError when this install has none)."""
    if not CHAMPION_FILE.is_file():
        from ..checkpoints import CheckpointError

        raise CheckpointError(f"no champion is shipped with this install ({CHAMPION_FILE} is missing)")
    return CHAMPION_FILE


def champion_card() -> dict:
    """The champion's model card (card.json)."""
    return json.loads(CARD_FILE.read_text())


def champion_search_settings() -> dict:
    """The search settings measured strongest over the champion (its card's ``search_settings``),
    which ``search:champion`` starts from: over a network stronger than the bots, the network plays
    its own rollouts (docs/results.md, "A teacher that grows"). Inline and --search-* settings win."""
    return dict(champion_card().get("search_settings", {})) if CARD_FILE.is_file() else {}


def champion_game():
    """The game the shipped champion plays (its model card's game and rules), or None when this
    install ships no champion."""
    if not (CHAMPION_FILE.is_file() and CARD_FILE.is_file()):
        return None
    from ..games.registry import game_from_config_dict

    card = champion_card()
    return game_from_config_dict(card["game"], card["rules"])


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["champion_file", "champion_card", "champion_search_settings", "champion_game", "file_sha256", "CHAMPION_FILE", "CARD_FILE"]


def export_champion(checkpoint: str | Path, out: str | Path) -> str:
    """Write the champion file ``out`` from an improvement checkpoint (a ``network`` checkpoint,
    ``deepcfr.checkpoints.export_network``); returns its sha256."""
    from ..checkpoints import export_network

    return file_sha256(export_network(checkpoint, out))


__all__ += ["export_champion"]


def shipped_value_function(game, device="cpu"):
    """The value function shipped beside the champion when it was made for ``game`` (its name,
    version and rules), else None: what ``arena``, ``eval`` and the gate correct for luck with."""
    if not VALUE_FILE.is_file():
        return None
    from ..train.value_fn import value_function_for

    return value_function_for(VALUE_FILE, game, device)


VALUE_CHOICES = "auto (the one shipped beside the champion where it was made for the game and rules), none, or a file of `deepcfr fit-value`"


def resolve_value_function(choice: str | None, game, device="cpu"):
    """The value function a ``value_fn`` setting names for ``game`` (VALUE_CHOICES); None: no
    corrections (``none``, or ``auto`` where nothing shipped fits the game)."""
    if choice is None or choice == "none":
        return None
    if choice == "auto":
        return shipped_value_function(game, device)
    from ..train.value_fn import load_value_function

    return load_value_function(choice, game, device)


__all__ += ["shipped_value_function", "resolve_value_function", "VALUE_FILE", "VALUE_CHOICES"]
