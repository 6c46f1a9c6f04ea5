"""Player specs: the one text form that names a player, everywhere.

Spec forms (``parse_player``):
  BOT                          a bot name: random, discard_only, heuristic_careful, ...
  champion                     the shipped champion network of the game (``deepcfr.players.shipped``)
  PATH                         a checkpoint (a path with a '/' or ending in .pt): its average
                               policy (the strategy network), sampled, as in ``eval``
  PATH@current                 its current policy, sigma_t (regret matching on the advantage networks,
                               or their regrets over the start policy: ``init.kl_temperature``)
  PATH@greedy, PATH@current,greedy   the most probable action instead of a sample
  search:SPEC                  rollout search over a bot or checkpoint SPEC; settings from
                               ``--search-*`` options
  search[key=value,...]:SPEC   the same with settings given inline (they win over the others)
  learner                      (``improve`` only) the network being trained, e.g. search:learner

Parsing checks the form only; what a spec needs to be built (a game, a file, a network) is
checked by :func:`deepcfr.players.load_player`. The grammar sits below every layer, as plain text:
the configs of train and improve check the form of the specs they hold (``checked_spec``), and
``deepcfr.players`` re-exports it beside the builder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

# Longer specs are refused before any file system call (a path over the OS's name limit raised
# OSError from the check whether it is a file).
MAX_SPEC_LENGTH = 512
# Error messages quote at most this much of what they were given.
QUOTE_LENGTH = 80

VALID_FORMS = """valid player specs:
  BOT                          a bot name (random, discard_only, heuristic_careful, heuristic_balanced, ...)
  champion                     the shipped champion network (champion@greedy, search:champion)
  PATH                         a checkpoint file (a path with '/' or ending in .pt): its average policy, sampled
  PATH@current                 its current policy, sigma_t; PATH@average is the default
  PATH@greedy                  play the most probable action (combine: PATH@current,greedy)
  search:SPEC                  rollout search over the bot or checkpoint SPEC (settings: --search-*)
  search[key=value,...]:SPEC   the same with inline settings, e.g. search[determinizations=64,candidates=4]:PATH"""

CHECKPOINT_OPTIONS = ("average", "current", "greedy")
CHAMPION = "champion"  # the shipped network (players.shipped)
LEARNER = "learner"  # improve: the network being trained
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")  # a bot name: a word of at most 64 characters


def quote(text: Any) -> str:
    """``repr(text)``, cut to QUOTE_LENGTH characters: messages never echo unbounded input."""
    shown = repr(text)
    return (
        shown if len(shown) <= QUOTE_LENGTH else f"{shown[: QUOTE_LENGTH - 5]}...{shown[-1]} ({len(str(text))} chars)"
    )


class PlayerSpecError(ValueError):
    """A spec that names no player; the message lists the valid forms."""

    def __init__(self, message: str):
        self.problem = message  # without the list of forms (a page shows its own)
        super().__init__(f"{message}\n{VALID_FORMS}")


@dataclass(frozen=True)
class PlayerSpec:
    kind: str  # "bot" | "checkpoint" | "network" | "search"
    name: str | None = None  # bot name; network name (learner)
    path: str | None = None  # checkpoint path, or "champion"
    policy: str = "average"  # checkpoint: average | current
    greedy: bool = False  # checkpoint, network: argmax play
    base: PlayerSpec | None = None  # search: the spec searched over
    settings: dict[str, Any] = field(default_factory=dict)  # search: inline settings

    def __str__(self) -> str:
        if self.kind == "bot":
            return str(self.name)
        if self.kind in ("checkpoint", "network"):
            options = ([self.policy] if self.policy != "average" else []) + (["greedy"] if self.greedy else [])
            return cast(str, self.path if self.kind == "checkpoint" else self.name) + (
                f"@{','.join(options)}" if options else ""
            )
        inline = f"[{','.join(f'{k}={_setting_text(v)}' for k, v in self.settings.items())}]" if self.settings else ""
        return f"search{inline}:{self.base}"

    @property
    def innermost(self) -> PlayerSpec:
        """The spec a search is over (itself for a spec that is no search)."""
        return cast(PlayerSpec, self.base) if self.kind == "search" else self

    @property
    def is_champion(self) -> bool:
        return self.kind == "checkpoint" and self.path == CHAMPION


def _setting_text(value: Any) -> str:
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _is_checkpoint_path(text: str) -> bool:
    if "/" in text or "\\" in text or text.endswith(".pt"):
        return True
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name the file system refuses is no file
        return False


_Spec = TypeVar("_Spec", bound=str | None)  # a text stays text


def checked_spec(value: _Spec, *, keep: tuple[str, ...] = ()) -> _Spec:
    """``value`` once its form is checked (a config field's validator): a player spec, None, or one of
    ``keep`` (words a list takes besides specs: improve's ``self`` and ``past``)."""
    if value is not None and value not in keep:
        parse_player(value)
    return value


def parse_player(spec: str) -> PlayerSpec:
    """A PlayerSpec from text (module docstring); raises PlayerSpecError listing the valid forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlayerSpecError(f"empty player spec {quote(spec)}")
    if len(spec) > MAX_SPEC_LENGTH:
        raise PlayerSpecError(f"player spec {quote(spec)} is longer than {MAX_SPEC_LENGTH} characters")
    text = spec.strip()
    if text.startswith("search"):
        rest = text[len("search") :]
        settings: dict[str, Any] = {}
        if rest.startswith("["):
            close = _closing_bracket(rest)
            if close < 0:
                raise PlayerSpecError(f"player spec {quote(spec)}: '[' of the search settings is never closed")
            settings = _parse_settings(spec, rest[1:close])
            rest = rest[close + 1 :]
        if rest.startswith(":"):
            inner = rest[1:]
            if inner.strip().startswith("search"):
                raise PlayerSpecError(f"player spec {quote(spec)}: search over search is not supported")
            return PlayerSpec(kind="search", base=parse_player(inner), settings=settings)
        if rest and not _is_checkpoint_path(text.partition("@")[0]):
            raise PlayerSpecError(f"player spec {quote(spec)}: a search spec looks like search:SPEC")
    path, _, options = text.rpartition("@") if "@" in text else (text, "", "")
    named = path in (CHAMPION, LEARNER)
    if named or _is_checkpoint_path(path) or (not path and options):
        if not path:
            raise PlayerSpecError(f"player spec {quote(spec)}: no checkpoint path before '@'")
        policy, greedy = "average", False
        for option in filter(None, (o.strip() for o in options.split(","))):
            if option not in CHECKPOINT_OPTIONS:
                raise PlayerSpecError(
                    f"player spec {quote(spec)}: unknown checkpoint option {quote(option)} "
                    f"(valid: {', '.join(CHECKPOINT_OPTIONS)})"
                )
            if option == "greedy":
                greedy = True
            else:
                policy = option
        if path == LEARNER:
            if policy != "average":
                raise PlayerSpecError(
                    f"player spec {quote(spec)}: the learner is one network (learner or learner@greedy)"
                )
            return PlayerSpec(kind="network", name=LEARNER, greedy=greedy)
        return PlayerSpec(kind="checkpoint", path=path, policy=policy, greedy=greedy)
    if not _NAME.match(text):
        raise PlayerSpecError(f"player spec {quote(spec)} is neither a bot name, a checkpoint path nor search:SPEC")
    return PlayerSpec(kind="bot", name=text)


def _closing_bracket(text: str) -> int:
    """Index of the ']' that closes the '[' at ``text[0]`` (brackets inside nest), or -1."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if depth == 0:
            return i
    return -1


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets (a value ``[2,3]`` stays whole)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    return pieces + [text[start:]]


def _parse_settings(spec: str, text: str) -> dict[str, Any]:
    settings = {}
    for item in filter(None, (x.strip() for x in _split_top_level(text))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PlayerSpecError(f"player spec {quote(spec)}: search setting {quote(item)} must look like key=value")
        settings[key.strip()] = parse_setting_value(
            value, f"player spec {quote(spec)}: search setting {quote(key.strip())}", PlayerSpecError
        )
    return settings


def parse_setting_value(text: str, where: str, error: type[Exception] = ValueError) -> Any:
    """A setting's value from text: a number, true/false, null or a plain string (YAML scalars);
    anything else (a list, a mapping, text YAML cannot read) raises ``error`` naming ``where``."""
    import yaml

    if text == "":
        return ""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        raise error(f"{where}: cannot read the value {quote(text)}") from None
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise error(
            f"{where}: the value {quote(text)} must be a number, true/false, null or a word, "
            f"not a {type(value).__name__}"
        )
    return value


# Settings whose value names a player (a spec) or a file: their Field carries ``names_player(...)`` or
# ``names_file(...)`` as ``json_schema_extra``, with the words the setting takes that name neither. A
# server confines every such setting (``named_settings``), today's and future ones alike.
def names_player(*words: str) -> dict[str, Any]:
    """A setting's marker: its value is a player spec, or one of ``words``."""
    return {"names": "player", "words": list(words)}


def names_file(*words: str) -> dict[str, Any]:
    """A setting's marker: its value is a file's path, or one of ``words``."""
    return {"names": "file", "words": list(words)}


def named_settings(model: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The settings of the pydantic ``model`` (a class) that name a player or a file: ``{field:
    ("player" | "file", words)}``."""
    named = {}
    for key, info in model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("names") in ("player", "file"):
            named[key] = (str(extra["names"]), tuple(extra.get("words", ())))
    return named


def split_specs(text: str) -> list[str]:
    """Comma-separated specs (``--vs a,b``); commas inside ``search[...]`` settings and between a
    checkpoint's options (``PATH@current,greedy``) do not split."""
    out: list[str] = []
    for piece in (p.strip() for p in _split_top_level(text)):
        if out and piece in CHECKPOINT_OPTIONS and "@" in out[-1]:
            out[-1] = f"{out[-1]},{piece}"
        elif piece:
            out.append(piece)
    return out


__all__ = [
    "PlayerSpec",
    "PlayerSpecError",
    "parse_player",
    "checked_spec",
    "parse_setting_value",
    "split_specs",
    "quote",
    "VALID_FORMS",
    "CHAMPION",
    "LEARNER",
    "MAX_SPEC_LENGTH",
    "names_player",
    "names_file",
    "named_settings",
]
