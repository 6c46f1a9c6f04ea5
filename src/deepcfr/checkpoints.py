"""Checkpoint files, the one owner of their format: writing, reading, validating, upgrading old
files, and the kinds a file holds. Every layer that saves or loads a network calls this module.

A checkpoint is one ``torch.save`` of a dict payload whose ``meta`` entry describes what it
holds: ``{format, format_version, kind, game, game_version, game_config, network, iteration,
created}``. ``network`` is the network config plus the input/output sizes, so a checkpoint
refuses to load into a run whose game, rules or network shapes differ. The kinds (``KINDS``):

- ``deepcfr_run``: a Deep CFR trainer's state (``train``: networks, optimisers, memories, RNG, league);
- ``improve_run``: an improvement run's (``improve``: the start run's advantage networks, the
  current network as ``strategy_net``, the positions as ``memories``, ``improve``: round and past
  networks);
- ``network``: an exported strategy network (the champion: config, game, ``strategy_net``,
  ``improve_rounds``), made from an improvement run by :func:`export_network`;
- ``value_function``: the full-state value function of ``deepcfr fit-value`` (``value_net``).
- ``hand_belief``: the learned belief of the opponent's hand of ``deepcfr fit-belief`` (``hand_net``).

Files written before ``meta.kind`` existed are upgraded on reading: the kind is what their keys
say (``improve``: an improvement run; ``distilled``: a network; else a Deep CFR run).

Writes go to a temporary file in the same directory, are flushed and fsynced, then renamed over
the target, so a crash mid-save leaves the previous checkpoint intact.

A payload holds tensors and plain data only (dicts, lists, tuples, strings, numbers, None; configs
as their JSON dumps): ``save_checkpoint`` refuses anything else, and every file is read with
``torch.load(weights_only=True)``, so loading a file, whoever made it, runs no code from it. A
file of an older deepcfr that holds other objects is refused with the command that converts it
once (``convert_checkpoint``, ``deepcfr convert-checkpoint PATH --trust``).
"""

from __future__ import annotations

import datetime as _dt
import os
import pickle
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from deepcfr.atomic import atomic_path
from deepcfr.games.registry import make_game_from_config

FORMAT_VERSION = 1
FORMAT_NAME = "deepcfr-checkpoint"
DEEPCFR_RUN = "deepcfr_run"
IMPROVE_RUN = "improve_run"
NETWORK = "network"
VALUE_FUNCTION = "value_function"
HAND_BELIEF = "hand_belief"
KINDS = (DEEPCFR_RUN, IMPROVE_RUN, NETWORK, VALUE_FUNCTION, HAND_BELIEF)
KIND_NAMES = {
    DEEPCFR_RUN: "Deep CFR run (deepcfr train)",
    IMPROVE_RUN: "improvement run (deepcfr improve)",
    NETWORK: "exported network (as the champion)",
    VALUE_FUNCTION: "value function (deepcfr fit-value)",
    HAND_BELIEF: "hand belief (deepcfr fit-belief)",
}


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, corrupt, of another format, or for another
    game/network. The message names the file and the problem."""


# ---------------------------------------------------------------------------- meta
def network_meta(config: Any, game: Any) -> dict[str, Any]:
    """The network shape a checkpoint records: config plus input/output sizes."""
    return {
        **config.network.model_dump(mode="json"),
        "input_size": int(game.feature_size),
        "output_size": int(game.num_actions),
    }


def expected_meta(config: Any, game: Any | None = None) -> dict[str, Any]:
    """What a checkpoint must match to be loaded by a run with ``config`` (game, version, rules,
    network shapes)."""
    game = game if game is not None else make_game_from_config(config)
    return {
        "game": game.name,
        "game_version": int(game.version),
        "game_config": _plain(game.config_dict()),
        "network": network_meta(config, game),
    }


def make_meta(config: Any, iteration: int, game: Any | None = None, kind: str = DEEPCFR_RUN) -> dict[str, Any]:
    """The full ``meta`` entry for a checkpoint of ``kind`` of ``config`` after ``iteration`` iterations."""
    _check_kind(kind, "make_meta")
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        **expected_meta(config, game),
        "iteration": int(iteration),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def game_identity(game: Any) -> dict[str, Any]:
    """The ``game`` entry of a run's payload: name, rules version and rules."""
    return {"name": game.name, "version": int(game.version), "config": game.config_dict()}


def game_meta(game: Any) -> dict[str, Any]:
    """The game keys of ``meta`` (what a value function is matched on)."""
    return {"game": game.name, "game_version": int(game.version), "game_config": _plain(game.config_dict())}


def _check_kind(kind: str, where: str) -> None:
    if kind not in KINDS:
        raise CheckpointError(f"{where}: unknown checkpoint kind {kind!r}; kinds: {', '.join(KINDS)}")


def _plain(value: Any) -> Any:
    """Tuples to lists (so a value survives YAML/JSON round trips and compares equal)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _diff(expected: Any, actual: Any, key: str) -> tuple[str, Any, Any] | None:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        for k in expected:
            sub = f"{key}.{k}" if key else str(k)
            if k not in actual:
                return sub, expected[k], "<missing>"
            found = _diff(expected[k], actual[k], sub)
            if found:
                return found
        for k in actual:
            if k not in expected:
                return (f"{key}.{k}" if key else str(k)), "<missing>", actual[k]
        return None
    return None if _plain(expected) == _plain(actual) else (key, expected, actual)


def check_meta(meta: Mapping[str, Any], expected: Mapping[str, Any], path: str | Path = "checkpoint") -> None:
    """Raise ``CheckpointError`` naming the first key where ``meta`` differs from ``expected``
    (only the keys of ``expected`` are compared)."""
    for k, want in expected.items():
        have = meta.get(k, "<missing>")
        found = _diff(want, have, k)
        if found:
            key, want_v, have_v = found
            raise CheckpointError(
                f"checkpoint {path} does not match this run: {key} is {have_v!r} in the checkpoint but {want_v!r} here"
            )


# ---------------------------------------------------------------------------- files
def save_checkpoint(path: str | Path, payload: dict) -> Path:
    """Write ``payload`` (which must hold ``meta`` with ``format_version`` and ``kind``) atomically to ``path``."""
    path = Path(path)
    meta = payload.get("meta") if isinstance(payload, dict) else None
    if not isinstance(meta, dict) or "format_version" not in meta or "kind" not in meta:
        raise CheckpointError(f"checkpoint payload for {path} needs meta with format_version and kind (see make_meta)")
    _check_kind(meta["kind"], f"checkpoint {path}")
    _check_plain(payload, f"checkpoint payload for {path}")
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            torch.save(payload, f)
    return path


# What a payload may hold: what torch.load(weights_only=True) reads back without running code.
_PLAIN = (dict, OrderedDict, list, tuple, str, int, float, bool, type(None), torch.Size, torch.dtype, torch.device)


def _check_plain(value: Any, where: str, key: str = "payload") -> None:
    """Raise ``CheckpointError`` naming the first entry of ``value`` that is not a tensor or plain data."""
    if isinstance(value, torch.Tensor):
        return
    if type(value) not in _PLAIN:
        raise CheckpointError(
            f"{where}: {key} is a {type(value).__module__}.{type(value).__qualname__}; a checkpoint "
            "holds tensors and plain data only (a config as its model_dump(mode='json'))"
        )
    if isinstance(value, dict):
        for k, v in value.items():
            _check_plain(k, where, f"{key} key {k!r}")
            _check_plain(v, where, f"{key}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_plain(v, where, f"{key}[{i}]")


def _to_plain(value: Any, where: str, key: str = "payload") -> Any:
    """``value`` as tensors and plain data: what older files held besides (numpy arrays and
    numbers, paths, pydantic models, sets) converted; anything else raises ``CheckpointError``."""
    import enum

    import numpy as np

    if isinstance(value, torch.Tensor):
        return value.detach().clone() if isinstance(value, torch.nn.Parameter) else value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, enum.Enum):
        return _to_plain(value.value, where, key)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "model_dump"):  # a pydantic model: its JSON dump, as configs are stored now
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {_to_plain(k, where, f"{key} key {k!r}"): _to_plain(v, where, f"{key}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_to_plain(v, where, key) for v in value)
    if isinstance(value, (list, tuple)):
        plain = [_to_plain(v, where, f"{key}[{i}]") for i, v in enumerate(value)]
        return plain if isinstance(value, list) else tuple(plain)
    for base in (bool, int, float, str):  # a subclass of a plain type (e.g. a str enum's member)
        if isinstance(value, base):
            return base(value)
    if type(value) in _PLAIN:
        return value
    raise CheckpointError(
        f"{where}: {key} is a {type(value).__module__}.{type(value).__qualname__}, which has no "
        "plain form; this file cannot be converted"
    )


def convert_checkpoint(path: str | Path, out: str | Path | None = None, trust: bool = False) -> Path:
    """Rewrite a checkpoint of an older deepcfr that holds Python objects (numpy arrays, paths,
    config objects) as tensors and plain data, which every deepcfr command then loads. Reading
    such a file unpickles it, which can run code: only with ``trust`` (files you made yourself).
    ``out`` defaults to ``path`` (replaced atomically). Returns the file written."""
    path = Path(path)
    out = Path(out) if out is not None else path
    if not trust:
        raise CheckpointError(
            f"converting {path} unpickles it, which runs any code it holds: pass trust=True "
            "(--trust) only for a file you made yourself"
        )
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(e).__name__})") from None
    plain = _to_plain(payload, f"checkpoint {path}")
    _read_meta(plain, path)  # a deepcfr checkpoint of this format version
    save_checkpoint(out, plain)
    load_checkpoint(out)  # what was written loads by the safe path
    return out


def cpu_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A module's state dict as CPU copies (checkpoints load on any device)."""
    return {k: v.detach().to("cpu").clone() for k, v in module.state_dict().items()}


def optimizer_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    import copy

    return copy.deepcopy(optimizer.state_dict())


def link_or_copy_checkpoint(src: str | Path, dst: str | Path) -> Path:
    """Make ``dst`` hold the same checkpoint as ``src`` atomically: a hard link where the
    filesystem allows (checkpoints are never modified in place, only replaced), else a copy."""
    import shutil

    src, dst = Path(src), Path(dst)
    with atomic_path(dst) as tmp:
        tmp.unlink()  # the link needs the name free
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
    return dst


def _read_meta(payload: Any, path: str | Path) -> dict[str, Any]:
    if not isinstance(payload, dict) or not isinstance(payload.get("meta"), dict):
        raise CheckpointError(f"{path} is not a deepcfr checkpoint (no meta)")
    meta = payload["meta"]
    if "format_version" not in meta:
        raise CheckpointError(f"{path} is not a deepcfr checkpoint (meta has no format_version)")
    if meta.get("format", FORMAT_NAME) != FORMAT_NAME:
        raise CheckpointError(f"{path} has format {meta.get('format')!r}, expected {FORMAT_NAME!r}")
    if meta["format_version"] != FORMAT_VERSION:
        raise CheckpointError(
            f"{path} has checkpoint format version {meta['format_version']!r}; "
            f"this deepcfr reads version {FORMAT_VERSION}"
        )
    if "kind" not in meta:
        meta["kind"] = _kind_of_old_file(payload)
    _check_kind(meta["kind"], f"checkpoint {path}")
    return meta


def _kind_of_old_file(payload: Mapping[str, Any]) -> str:
    """The kind of a file written before ``meta.kind`` (what its keys say)."""
    if "improve" in payload:
        return IMPROVE_RUN
    if payload.get("distilled"):
        return NETWORK
    return DEEPCFR_RUN


def checkpoint_kind(payload: Mapping[str, Any]) -> str:
    """The kind of a loaded payload (KINDS)."""
    return payload["meta"]["kind"] if "kind" in payload.get("meta", {}) else _kind_of_old_file(payload)


_ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive (an older torch: a pickle, b"\x80" first)


def _load_plain(path: Path, map_location) -> Any:
    """``torch.load`` with ``weights_only``: tensors and plain data only, so a file can never run
    code as it loads. The errors say what the file is without quoting what it holds."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # torch raises many types for truncated or garbled data
        error = e
    with open(path, "rb") as f:
        head = f.read(len(_ZIP_MAGIC))
    if (
        isinstance(error, pickle.UnpicklingError)
        and "Weights only load failed" in str(error)
        and (head == _ZIP_MAGIC or head[:1] == b"\x80")
    ):
        raise CheckpointError(
            f"checkpoint {path} holds Python objects other than tensors and plain data, which deepcfr never "
            "unpickles (they could run code). If you wrote it yourself with an older deepcfr and trust it, "
            f"convert it once: deepcfr convert-checkpoint {path} --trust"
        ) from None
    what = "is corrupt or truncated" if head == _ZIP_MAGIC else "is not a checkpoint (torch.save writes a zip archive)"
    raise CheckpointError(f"checkpoint {path} {what} ({type(error).__name__})") from None


def load_checkpoint(
    path: str | Path,
    expected: Mapping[str, Any] | None = None,
    map_location: str | torch.device | None = "cpu",
    kinds: tuple[str, ...] | None = None,
) -> dict:
    """Load a checkpoint payload (an old file upgraded: its ``meta.kind`` set). Raises
    ``CheckpointError`` for a missing or corrupt file, a file that is not a deepcfr checkpoint of
    this format version, one of a kind outside ``kinds`` (None: any), or (with ``expected``) a
    checkpoint whose meta differs (the message names the key and both values)."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if not path.is_file():
        raise CheckpointError(f"checkpoint path is not a file: {path}")
    payload = _load_plain(path, map_location)
    meta = _read_meta(payload, path)
    if kinds is not None and meta["kind"] not in kinds:
        raise CheckpointError(
            f"checkpoint {path} holds a {KIND_NAMES[meta['kind']]}; this needs a "
            f"{' or a '.join(KIND_NAMES[k] for k in kinds)}"
        )
    if expected:
        check_meta(meta, expected, path)
    return payload


def network_payload(improve_run: Mapping[str, Any]) -> dict:
    """The ``network`` checkpoint of an improvement run's payload: its config, game and distilled
    strategy network (no start-run advantage networks, positions or past networks)."""
    return {
        "config": improve_run["config"],
        "game": improve_run["game"],
        "meta": {**improve_run["meta"], "kind": NETWORK},
        "iteration": int(improve_run.get("iteration", 0)),
        "strategy_net": improve_run["strategy_net"],
        "improve_rounds": int(improve_run["improve"]["round"]),
    }


def export_network(checkpoint: str | Path, out: str | Path) -> Path:
    """Write the ``network`` checkpoint ``out`` of an improvement run's checkpoint (``network_payload``)."""
    return save_checkpoint(out, network_payload(load_checkpoint(checkpoint, map_location="cpu", kinds=(IMPROVE_RUN,))))


__all__ = [
    "CheckpointError",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "KINDS",
    "DEEPCFR_RUN",
    "IMPROVE_RUN",
    "NETWORK",
    "VALUE_FUNCTION",
    "KIND_NAMES",
    "network_meta",
    "expected_meta",
    "make_meta",
    "game_identity",
    "game_meta",
    "check_meta",
    "save_checkpoint",
    "load_checkpoint",
    "checkpoint_kind",
    "cpu_state",
    "optimizer_state",
    "link_or_copy_checkpoint",
    "network_payload",
    "export_network",
    "convert_checkpoint",
]
