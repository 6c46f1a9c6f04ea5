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


def champion_file() -> Path:
    """The shipped champion checkpoint (CheckpointError when this install has none)."""
    if not CHAMPION_FILE.is_file():
        from ..train.checkpoint import CheckpointError

        raise CheckpointError(f"no champion is shipped with this install ({CHAMPION_FILE} is missing)")
    return CHAMPION_FILE


def champion_card() -> dict:
    """The champion's model card (card.json)."""
    return json.loads(CARD_FILE.read_text())


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["champion_file", "champion_card", "file_sha256", "CHAMPION_FILE", "CARD_FILE"]
