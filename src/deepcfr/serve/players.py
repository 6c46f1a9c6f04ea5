"""Which files a request may name, the one resolver for all of them: a player's checkpoint, and
every search setting that names a player or a file (``player_specs.named_settings``: the rollout
policy, the belief's opponent model, the value function, the hand belief, and any setting added
later with the same marker).

A request names a file by its served name: a path relative to ``--runs`` ending in ``.pt`` (no
absolute path, no ``..``, no symbolic link out of it), or the name /api/info lists for a file given with
``--checkpoint`` (its file name, with as many parent folders as tell it from the others; the path
as given on the command line is taken too). A name that is not served is refused with one message
whatever is or is not there, so an answer never tells whether a path exists or what it holds, and
answers name files only by their served names, never by where they lie."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ..player_specs import PlayerSpec, named_settings, parse_player, quote
from ..search.config import SearchConfig
from .paths import PathError, resolve_under

__all__ = ["ServedFiles"]


def _served_names(files: Sequence[Path]) -> list[str]:
    """A short name for each file: its file name, with parent folders added until the names differ."""
    depth = 1
    while True:
        names = ["/".join(f.resolve().parts[-depth:]) for f in files]
        if len(set(names)) == len(names) or depth >= max((len(f.resolve().parts) for f in files), default=1):
            return names
        depth += 1


class ServedFiles:
    """The files a server may load: those given with ``--checkpoint`` and files under ``runs``."""

    def __init__(self, checkpoints: Sequence[str | Path] = (), runs: str | Path | None = None):
        files = [Path(c) for c in checkpoints]
        self.runs = Path(runs).resolve() if runs is not None else None
        self.names = _served_names(files)  # what /api/info lists, in the order given
        self._given = {name: f.resolve() for name, f in zip(self.names, files)}
        self._aliases = {str(c): name for c, name in zip(checkpoints, self.names)}

    def hidden(self) -> dict[str, str]:
        """The files given with ``--checkpoint`` by where they lie, to their served names (for
        messages that quote a file loaded)."""
        return {str(file): name for name, file in self._given.items()}

    def name(self, text: str, what: str = "checkpoint") -> str:
        """The served name of the file ``text`` names; PathError when it names none this server serves."""
        text = self._aliases.get(text, text)
        if text in self._given:
            return text
        self.file(text, what)
        return PurePosixPath(text.replace("\\", "/")).as_posix()

    def file(self, name: str, what: str = "checkpoint") -> Path:
        """The file of a served name (``name``'s result, or a name it would accept)."""
        name = self._aliases.get(name, name)
        if name in self._given and self._given[name].is_file():
            return self._given[name]
        try:
            if self.runs is None:
                raise PathError("no runs directory")
            if not name.endswith(".pt"):  # what deepcfr writes; a run's other files are never opened
                raise PathError("not a checkpoint's name")
            file = resolve_under(self.runs, name, what)
            if not file.is_file():
                raise PathError("not a file")
            return file
        except (PathError, OSError, ValueError):  # one answer, whatever is or is not there
            raise PathError(
                f"{what} {quote(name)} is not one this server serves: name a .pt file under the runs "
                "directory by its path there, or a checkpoint /api/info lists"
            ) from None

    def confine(self, spec: PlayerSpec) -> PlayerSpec:
        """``spec`` with every file it names (its checkpoint, its search settings' players and
        files) as a served name; PathError naming the first that is not served."""
        return self._walk(spec, self.name)

    def localize(self, spec: PlayerSpec) -> PlayerSpec:
        """A confined ``spec`` with every served name replaced by its file (what is loaded)."""
        return self._walk(spec, lambda name, what: str(self.file(name, what)))

    def _walk(self, spec: PlayerSpec, rename) -> PlayerSpec:
        if spec.kind == "checkpoint" and not spec.is_champion:
            return dataclasses.replace(spec, path=rename(spec.path, "checkpoint"))
        if spec.kind != "search":
            return spec
        settings = dict(spec.settings)
        for key, (names, words) in named_settings(SearchConfig).items():
            value = settings.get(key)
            if value is None or value in words:
                continue
            if not isinstance(value, str):
                raise PathError(f"search setting {key}={quote(str(value))} names no player or file")
            if names == "player":
                settings[key] = str(self._walk(parse_player(value), rename))
            else:
                settings[key] = rename(value, f"search setting {key}: file")
        return dataclasses.replace(spec, base=self._walk(spec.innermost, rename), settings=settings)
