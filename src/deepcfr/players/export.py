"""A player's network as an ONNX file, for other stacks and for the browser (``deepcfr export``).

Only a player that *is* one network can be exported: a checkpoint's average policy (its strategy
network), the champion, a distilled network. Its ONNX graph takes ``features`` ``[batch, F]``
float32 (the game's ``encode`` of the compact observation, at the encoding version in the
metadata) and ``legal_mask`` ``[batch, A]`` bool, and answers ``logits`` ``[batch, A]`` (the
greedy move is the highest legal logit, ties to the lowest index) and ``probabilities``, the
masked softmax the player samples from (exact zeros on illegal actions). A bot, a search or a
checkpoint's current policy (regret matching over two advantage networks) is refused by name.

The file's metadata (``metadata_props``, all strings; JSON where structured): ``deepcfr.version``,
``deepcfr.player``, ``deepcfr.game``, ``deepcfr.rules`` (the rule parameters), ``deepcfr.variant``,
``deepcfr.encoding_version``, ``deepcfr.feature_size``, ``deepcfr.num_actions``,
``deepcfr.action_names`` and ``deepcfr.source_sha256`` (of the checkpoint file).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch

from ..player_specs import PlayerSpec, parse_player, quote
from .build import NetworkPlayer, checkpoint_file, load_player

OPSET = 17  # what onnxruntime (Python and web) of the pinned versions run
INPUTS = ("features", "legal_mask")
OUTPUTS = ("logits", "probabilities")
ONNX_MISSING = "ONNX export needs the optional packages onnx and onnxruntime: pip install 'deepcfr[onnx]'"


class ExportError(ValueError):
    """A player that cannot be exported (its message names it and why)."""


def onnx_available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _PolicyGraph(torch.nn.Module):
    """What the ONNX graph computes: the network's logits and the masked softmax of them."""

    def __init__(self, network: torch.nn.Module):
        super().__init__()
        self.network = network

    def forward(self, features: torch.Tensor, legal_mask: torch.Tensor):
        from ..cfr.networks import masked_softmax

        logits = self.network(features)
        return logits, masked_softmax(logits, legal_mask)


def exportable_network(player, name: str | None = None) -> torch.nn.Module:
    """The one network ``player`` plays, or ExportError naming what it is instead."""
    from ..cfr.policies import StrategyNetPolicy

    name = name or getattr(player, "name", type(player).__name__)
    if not isinstance(player, NetworkPlayer):
        what = (
            "a search (rollouts over a base player, not one network: export its base)"
            if hasattr(player, "search")
            else "a bot (rules in code, not a network)"
            if hasattr(player, "bot")
            else f"a {type(player).__name__}"
        )
        raise ExportError(f"player {quote(name)} cannot be exported to ONNX: it is {what}")
    policy = player.policy_object
    if not isinstance(policy, StrategyNetPolicy) or not isinstance(policy.network, torch.nn.Module):
        raise ExportError(
            f"player {quote(name)} cannot be exported to ONNX: its {player.kind} policy is not one "
            "network (the current policy is regret matching over two advantage networks); "
            "export the average policy (PATH or PATH@greedy)"
        )
    return policy.network


def _variant_of(game) -> str:
    """The named rule variant the game plays (the ply cap aside: a safety limit, not a rule), or ""."""
    from .build import same_game

    for name in getattr(game, "variants", ()):
        if same_game(game, type(game).from_params(name)):
            return name
    return ""


def _metadata(player, spec: PlayerSpec, source: Path | None) -> dict[str, str]:
    from .. import __version__
    from .shipped import file_sha256

    game = player.game
    encoder = getattr(game, "encoder", None)
    version = getattr(encoder, "version", None)
    names = [game.action_name(a) for a in range(game.num_actions)] if hasattr(game, "action_name") else []
    meta = {
        "deepcfr.version": __version__,
        "deepcfr.player": str(spec),
        "deepcfr.game": game.name,
        "deepcfr.rules": json.dumps(game.config_dict(), sort_keys=True),
        "deepcfr.variant": _variant_of(game),
        "deepcfr.encoding_version": "" if version is None else str(version),
        "deepcfr.feature_size": str(game.feature_size),
        "deepcfr.num_actions": str(game.num_actions),
        "deepcfr.action_names": json.dumps(names),
        "deepcfr.inputs": (
            "features [batch, feature_size] float32 (the game's encode); legal_mask [batch, num_actions] bool"
        ),
        "deepcfr.outputs": "logits [batch, num_actions]; probabilities [batch, num_actions] (masked softmax)",
    }
    if source is not None and source.is_file():
        meta["deepcfr.source_sha256"] = file_sha256(source)
    return meta


def export_onnx(spec: str | PlayerSpec, out: str | Path, game=None) -> dict[str, str]:
    """Write the network of player ``spec`` to ``out`` (ONNX); returns the metadata written.
    ExportError for a player that is not one network; ImportError without onnx installed."""
    if not onnx_available():
        raise ImportError(ONNX_MISSING)
    import onnx

    spec = parse_player(spec) if isinstance(spec, str) else spec
    if spec.kind != "checkpoint":
        kind = {
            "bot": "a bot (rules in code, not a network)",
            "search": "a search (rollouts over a base player, not one network: export its base)",
            "network": "improve's learner (export a checkpoint of it)",
        }
        raise ExportError(
            f"player {quote(str(spec))} cannot be exported to ONNX: it is {kind.get(spec.kind, spec.kind)}"
        )
    player = load_player(spec, game, device="cpu")
    network = exportable_network(player, str(spec))
    graph = _PolicyGraph(network).eval()
    game = player.game
    example = (torch.zeros(2, game.feature_size), torch.ones(2, game.num_actions, dtype=torch.bool))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    batch = {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        # the TorchScript exporter (deprecated, so its notices are silenced): the torch.export one needs
        # onnxscript, and this graph is a few ops
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            graph,
            example,
            str(tmp),
            dynamo=False,
            opset_version=OPSET,
            input_names=list(INPUTS),
            output_names=list(OUTPUTS),
            dynamic_axes={n: batch for n in INPUTS + OUTPUTS},
        )
    model = onnx.load(str(tmp))
    meta = _metadata(player, spec, checkpoint_file(spec))
    for key, value in meta.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    model.producer_name = "deepcfr"
    onnx.checker.check_model(model)
    onnx.save(model, str(tmp))
    tmp.replace(out)
    return meta


def onnx_metadata(path: str | Path) -> dict[str, str]:
    """The ``deepcfr.*`` metadata of an exported file."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return {p.key: p.value for p in model.metadata_props if p.key.startswith("deepcfr.")}


__all__ = [
    "export_onnx",
    "exportable_network",
    "onnx_metadata",
    "onnx_available",
    "ExportError",
    "ONNX_MISSING",
    "INPUTS",
    "OUTPUTS",
]
