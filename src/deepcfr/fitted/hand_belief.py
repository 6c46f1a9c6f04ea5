"""A learned belief of the opponent's hand, for the search's determinizations (``search[belief=learned]``).

``HandBelief(game, net)(obs) -> [n, cards]``: for the decider's observation, each card's
log-weight of being in the opponent's hand; ``determinize(obs, d, generator, hand_logits=...)``
then draws the opponent's unknown cards one by one in proportion to exp(logit) (the Gumbel
top-k draw) instead of uniformly. One forward per decision: no replay of the game, no particles.

Its network reads the encoded observation and gives one logit per card kind (copies no observer can
tell apart share one: games' ``hidden_hand`` capability), fitted (``fit_hand_belief``) by binary
cross-entropy on recorded positions (``value_fn.collect_positions``: both seats' views of each
state): for each kind, how many of the observer's unknown copies the opponent holds. The network
learns a correction to the uniform belief: its output is added to the uniform log-odds, the share
of the unknown cards in the opponent's hand, which is the same for every card of a row and so
does not change the draw (only the correction does). Saved as a checkpoint of kind
``hand_belief`` whose meta names the game, its rules and what it was fitted on.

What the observation tells: the opponent's expeditions, its discards and its draws from the piles
follow from its hand under the players that made the positions, so a belief fitted on the
champion's games is a model of the champion-like opponent (docs/log/results.md, "A learned belief of
the opponent's hand").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from ..cfr.networks import DeepCFRMLP
from ..checkpoints import HAND_BELIEF
from ..games.base import capability, has_capability
from .value_fn import Positions, fit_steps, game_network_for, held_out_split, save_game_network


class HandBelief:
    """Observations -> ``[n, cards]`` log-weights of each card being in the opponent's hand (the
    cards the observer sees get weights too; ``determinize`` only reads the unknown ones)."""

    def __init__(self, game, net: DeepCFRMLP, trained_on: dict | None = None):
        capability(game, "hidden_hand")  # MissingCapability (a ValueError) names the game
        if net.output_size != game.hand_kind_count or net.input_size != game.feature_size:
            raise ValueError(
                f"a hand belief of {game.name} maps {game.feature_size} features to "
                f"{game.hand_kind_count} kinds; this network maps {net.input_size} to {net.output_size}"
            )
        self.game, self.net, self.trained_on = game, net.eval(), trained_on or {}
        self.device = next(net.parameters()).device

    @torch.no_grad()
    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        kind_logits = self.net(self.game.encode(obs.to(self.device)).float())
        return kind_logits[:, self.game.card_kinds(self.device)].to(obs.device)


def hand_targets(game, views: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For views ``[n, 2, obs_size]`` (the observer's first): (unknown [n, K], held [n, K]) by
    kind (``hidden_hand``) and the uniform belief's log-odds ``[n]``: the share of the observer's
    unknown cards that the opponent holds."""
    unknown, held = game.hidden_hand(views[:, 0], views[:, 1])
    share = held.sum(1).double() / unknown.sum(1).clamp(min=1).double()
    return unknown, held, torch.logit(share.clamp(1e-4, 1 - 1e-4)).float()


def _log_loss(kind_logits: torch.Tensor, unknown: torch.Tensor, held: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy summed over each unknown card (held or not), per unknown card."""
    log_p = torch.nn.functional.logsigmoid(kind_logits)
    log_not = torch.nn.functional.logsigmoid(-kind_logits)
    total = -(held * log_p + (unknown - held) * log_not).sum()
    return total / unknown.sum().clamp(min=1)


def fit_hand_belief(
    game,
    positions: Positions,
    hidden_size: int = 256,
    num_layers: int = 2,
    steps: int = 12000,
    batch_size: int = 1024,
    lr: float = 1e-3,
    held_out: float = 0.05,
    seed: int = 0,
    device: str | torch.device = "cpu",
    on_progress: Callable[[int, int, float], None] | None = None,
) -> tuple[DeepCFRMLP, dict]:
    """A hand-belief network fitted to ``positions`` (Adam, cosine decay; each batch relabelled by
    a random symmetry where the game has one, both views alike), and its figures: the held-out
    log loss per unknown card beside the uniform belief's (``uniform_log_loss``; ``explained``:
    the share of it removed). ``on_progress(step, steps, train log loss)``."""
    capability(game, "hidden_hand")
    views = positions.views
    gen, held_rows, train = held_out_split(views.shape[0], held_out, seed)
    net = DeepCFRMLP(game.feature_size, game.hand_kind_count, hidden_size, num_layers).to(device)
    symmetry = capability(game, "symmetry") if has_capability(game, "symmetry") else None

    def next_loss() -> torch.Tensor:
        batch = views[train[torch.randint(train.numel(), (batch_size,), generator=gen)]]
        if symmetry is not None:  # the same relabelling of both views: a position the rules cannot tell apart
            relabel = symmetry.sample(batch_size, gen)
            batch = torch.stack([symmetry.obs(batch[:, 0], relabel), symmetry.obs(batch[:, 1], relabel)], dim=1)
        unknown, held, prior = (t.to(device) for t in hand_targets(game, batch))
        out = net(game.encode(batch[:, 0]).to(device)) + prior[:, None]
        return _log_loss(out, unknown.float(), held.float())

    fit_steps(net, steps, lr, next_loss, on_progress)
    net.eval()
    fitted, uniform, cards = 0.0, 0.0, 0.0  # log losses summed over the held-out unknown cards
    with torch.no_grad():
        for chunk in held_rows.split(8192):
            unknown, held, prior = (t.to(device) for t in hand_targets(game, views[chunk]))
            weight = float(unknown.sum())
            out = net(game.encode(views[chunk][:, 0]).to(device)) + prior[:, None]
            fitted += float(_log_loss(out, unknown.float(), held.float())) * weight
            uniform += float(_log_loss(prior[:, None].expand_as(out), unknown.float(), held.float())) * weight
            cards += weight
    info = {
        "positions": int(views.shape[0]),
        "held_out": int(held_rows.numel()),
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "held_out_log_loss": fitted / cards,
        "uniform_log_loss": uniform / cards,
        "explained": 1.0 - fitted / uniform if uniform > 0 else float("nan"),
    }
    return net.cpu(), info


# ------------------------------------------------------------------------------ files
def save_hand_belief(path: str | Path, belief: HandBelief) -> Path:
    """Write the hand belief atomically as a checkpoint of kind ``hand_belief``."""
    return save_game_network(path, HAND_BELIEF, "hand_net", belief.game, belief.net, belief.trained_on)


def load_hand_belief(
    path: str | Path, game, device: str | torch.device = "cpu", required: bool = True
) -> HandBelief | None:
    """A saved hand belief, refused (CheckpointError) unless it was made for ``game`` (its name,
    version and rules); with ``required=False`` None for another game's (a file that is not a hand
    belief, or is corrupt, raises CheckpointError either way)."""
    found = game_network_for(path, HAND_BELIEF, "hand_net", "hand belief", "deepcfr fit-belief", game, device, required)
    return HandBelief(game, found[0], found[1].get("trained_on")) if found is not None else None
