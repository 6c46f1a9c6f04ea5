"""A value function of the full state, for variance-reduced evaluation (evaluate/variance.py).

``FullStateValue(game, net)(state) -> [n]`` estimates the final score difference seat 0 minus
seat 1 from everything the arena knows but the order of what is still to be dealt: its input is
the mover's observation and the other seat's, encoded and concatenated (mover first, so one
network serves both seats; its output is in the mover's frame and turned to seat 0's). For Lost
Cities that is both hands, the table and the deck as a set.

Where the game names its chance outcomes by kind (capability ``chance_kinds``: a drawn card's
identity), the network has a chance head too: ``chance_values(state) -> [n, kinds]``, from one
forward of the state before chance (the mover about to draw), the value after each kind of outcome
its chance action could bring, so the luck corrections average over a deck with one forward per
draw instead of one per card. It is taught by a state value (a teacher) over every card each
recorded draw could have brought (``fit_value``).

It is fitted (``fit_value``) by regression on the final score differences of recorded games
(``collect_positions``: every position of matches between the given sides, subsampled), and saved
as a checkpoint of kind ``value_function`` whose meta names the game, its rules and what it was
trained on (``save_value_function`` / ``load_value_function``). Corrections stay unbiased whatever
its error; a better fit only removes more variance.
"""

from __future__ import annotations

import datetime as _dt
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..cfr.networks import DeepCFRMLP
from ..checkpoints import (
    FORMAT_NAME,
    FORMAT_VERSION,
    VALUE_FUNCTION,
    CheckpointError,
    cpu_state,
    game_meta,
    load_checkpoint,
    save_checkpoint,
)
from ..devices import fast_bfloat16
from ..evaluate.arena import play_match
from ..evaluate.variance import score_difference
from ..games.base import capability, has_capability, index_state


def _views(game, state) -> tuple[torch.Tensor, torch.Tensor]:
    """[n, 2, obs_size] the mover's observation then the other seat's, and [n] the mover."""
    mover = game.current_player(state).clamp(min=0)
    return torch.stack([game.observe(state, mover), game.observe(state, 1 - mover)], dim=1), mover


def encode_views(game, views: torch.Tensor) -> torch.Tensor:
    """[n, 2 * feature_size] features of ``views [n, 2, obs_size]`` (mover first)."""
    n = views.shape[0]
    return game.encode(views.reshape(2 * n, -1)).reshape(n, 2 * game.feature_size)


class FullStateValue:
    """The value function callable the arena takes: states -> [n] float seat 0 minus seat 1.

    Batched for the way the luck corrections call it: the states after each card a deck could
    have given share the other seat's view, so each distinct view is encoded, and multiplied by
    its half of the first layer, once (``_forward``); the matmuls run in bfloat16 where the
    device has native kernels (``bfloat16``)."""

    def __init__(self, game, net: DeepCFRMLP, trained_on: dict | None = None, bfloat16: bool | None = None):
        if getattr(net, "input_size", 2 * game.feature_size) != 2 * game.feature_size:
            raise ValueError(
                f"value network input {net.input_size} does not match {game.name}'s 2 x {game.feature_size} features"
            )
        outputs = getattr(net, "output_size", 1)
        if outputs not in (1, 1 + chance_kind_count(game)):
            raise ValueError(
                f"value network output {outputs} is neither 1 (a state value) nor 1 + "
                f"{chance_kind_count(game)} (and {game.name}'s chance kinds)"
            )
        # evaluate/variance.py asks for this where it exists: None without a chance head
        self.chance_values = self._chance_values if outputs > 1 else None
        self.game = game
        self.net = net.eval()
        self.trained_on = trained_on or {}
        device = next(net.parameters()).device
        self.bfloat16 = fast_bfloat16(device) if bfloat16 is None else bfloat16

    @torch.no_grad()
    def __call__(self, state) -> torch.Tensor:
        views, mover = _views(self.game, state)
        mover_value = self._forward(views)[:, 0].float().to(mover.device)
        return torch.where(mover == 0, mover_value, -mover_value)

    @torch.no_grad()
    def _chance_values(self, state) -> torch.Tensor:
        """[n, kinds] seat 0 minus seat 1 after each kind of outcome of the chance action of each
        state's mover (a deck draw), from one forward of the state before it."""
        views, mover = _views(self.game, state)
        mover_values = self._forward(views, share=False)[:, 1:].float().to(mover.device)
        return torch.where((mover == 0)[:, None], mover_values, -mover_values)

    def _forward(self, views: torch.Tensor, share: bool = True) -> torch.Tensor:
        """[n, outputs] the network's values of ``views [n, 2, obs_size]`` (mover first); ``share``:
        look for views that repeat (the states after each move or card share the other seat's),
        not worth its cost where every row is another position (the states before chance)."""
        device = next(self.net.parameters()).device
        first, rest = self.net.body[0], self.net.body[1:]
        assert isinstance(first, nn.Linear)  # DeepCFRMLP's body opens with its first Linear
        F = self.game.feature_size
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=self.bfloat16):
            if not share:
                return self.net(encode_views(self.game, views).to(device))
            hidden = first.bias
            for side in (0, 1):
                distinct, where = _distinct_rows(views[:, side])
                part = self.game.encode(distinct).to(device) @ first.weight[:, side * F : (side + 1) * F].T
                hidden = hidden + part[where.to(device)]
            return self.net.head(rest(hidden))


def _distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows of a [n, K] uint8 tensor and, for each row, the index of its copy: rows
    hashed to one word (a one-dimensional unique is many times faster than a row-wise one), the
    hash checked to have joined only equal rows (else every row is its own)."""
    n, k = rows.shape
    words = torch.nn.functional.pad(rows, (0, -k % 8)).view(torch.int64)
    mix = torch.arange(1, words.shape[1] + 1, device=rows.device, dtype=torch.int64) * 0x9E3779B97F4A7C15 % (1 << 61)
    hashed = (words * mix).sum(dim=1)
    keys, where = torch.unique(hashed, return_inverse=True)
    first = torch.full((keys.numel(),), n, dtype=torch.long, device=rows.device)
    first.scatter_reduce_(0, where, torch.arange(n, device=rows.device), reduce="amin")
    distinct = rows[first]
    if not torch.equal(distinct[where], rows):  # a collision: no sharing
        return rows, torch.arange(n, device=rows.device)
    return distinct, where


def chance_kind_count(game) -> int:
    """How many kinds of chance outcome the game names (0 without the ``chance_kinds`` capability)."""
    return int(game.chance_kind_count) if has_capability(game, "chance_kinds") else 0


def value_network(game, hidden_size: int = 256, num_layers: int = 2, chance_head: bool = False) -> DeepCFRMLP:
    """The state value (output 0) and, with ``chance_head``, the value after each chance kind."""
    if chance_head and not chance_kind_count(game):
        raise ValueError(f"{game.name} names no chance kinds (capability chance_kinds): no chance head")
    return DeepCFRMLP(
        2 * game.feature_size, 1 + (chance_kind_count(game) if chance_head else 0), hidden_size, num_layers
    )


# ------------------------------------------------------------------------------ positions
@dataclass
class Positions:
    """Recorded positions: ``views [M, 2, obs_size]`` (mover first) and ``targets [M]``, the
    final score difference in the mover's frame."""

    views: torch.Tensor
    targets: torch.Tensor
    chance_targets: torch.Tensor | None = None  # [M, kinds] a teacher's values after each kind (NaN: none)

    def __len__(self) -> int:
        return self.targets.shape[0]


class _PositionRecorder:
    """A game whose ``step`` notes a random subset of the live positions passing through it (as
    evaluate.replay.RecordingGame notes actions), so a match records them unchanged."""

    def __init__(self, game, keep: float, generator: torch.Generator, teacher: Callable | None = None):
        self._game, self.keep, self.generator, self.teacher = game, keep, generator, teacher
        self.teacher_values: list[torch.Tensor] = []
        self.rows: list[torch.Tensor] = []
        self.views: list[torch.Tensor] = []
        self.movers: list[torch.Tensor] = []
        self.last_state = None

    def __getattr__(self, name):
        return getattr(self._game, name)

    def step(self, state, actions, *args, **kwargs):
        live = ~self._game.is_terminal(state)
        take = live & (torch.rand(live.shape[0], generator=self.generator, device=live.device) < self.keep)
        rows = take.nonzero().squeeze(1)
        if rows.numel():
            kept = index_state(state, rows)
            views, mover = _views(self._game, kept)
            if self.teacher is not None:
                self.teacher_values.append(self._teacher_values(self.teacher, kept, actions[rows], mover).cpu())
            self.rows.append(rows.cpu())
            self.views.append(views.cpu())
            self.movers.append(mover.cpu())
        self.last_state = self._game.step(state, actions, *args, **kwargs)
        return self.last_state

    def _teacher_values(self, teacher: Callable, state, actions, mover) -> torch.Tensor:
        """[n, kinds] the ``teacher``'s value after each kind of outcome of each row's chance (the
        mover's frame; NaN where the row meets no chance or the kind cannot come)."""
        source, outcomes, _, kinds = self._game.chance_outcomes(state, actions, with_kinds=True)
        out = torch.full((actions.shape[0], chance_kind_count(self._game)), float("nan"), device=actions.device)
        if source.numel():
            values = teacher(outcomes).float().to(actions.device)
            out[source, kinds] = torch.where(mover[source] == 0, values, -values)
        return out

    def positions(self) -> Positions:
        final = score_difference(self._game, self.last_state).cpu()
        rows, mover = torch.cat(self.rows), torch.cat(self.movers)
        targets = torch.where(mover == 0, final[rows], -final[rows]).float()
        teacher = torch.cat(self.teacher_values) if self.teacher is not None else None
        return Positions(torch.cat(self.views), targets, teacher)


def collect_positions(
    game,
    matchups: Sequence[tuple[Any, Any]],
    games: int,
    seed: int = 0,
    keep: float = 0.5,
    batch_games: int = 2000,
    teacher: Callable | None = None,
    on_batch: Callable[[int, int, float], None] | None = None,
) -> Positions:
    """Positions of ``games`` games (paired deals, in batches) of each matchup ``(side_a,
    side_b)``, each live position kept with probability ``keep``. With ``teacher`` (a value
    function of states) the positions before chance carry its value after every outcome, the
    chance head's targets. ``on_batch(done, total, seconds)`` reports progress."""
    gen = torch.Generator().manual_seed(seed)
    parts, done, total, start = [], 0, games * len(matchups), time.perf_counter()
    for m, (side_a, side_b) in enumerate(matchups):
        for b in range(math.ceil(games / batch_games)):
            n = min(batch_games, games - b * batch_games)
            n += n % 2
            recorder = _PositionRecorder(game, keep, gen, teacher)
            play_match(recorder, side_a, side_b, n, seed=seed + 1000 * m + 7 * b)
            parts.append(recorder.positions())
            done += n
            if on_batch is not None:
                on_batch(done, total, time.perf_counter() - start)
    taught = [p.chance_targets for p in parts if p.chance_targets is not None]  # every part's, with a teacher
    return Positions(
        torch.cat([p.views for p in parts]),
        torch.cat([p.targets for p in parts]),
        torch.cat(taught) if teacher is not None else None,
    )


# ------------------------------------------------------------------------------ fitting
def held_out_split(n: int, held_out: float, seed: int) -> tuple[torch.Generator, torch.Tensor, torch.Tensor]:
    """A fit's seeded start: (its generator, the held-out rows, the training rows) of ``n`` positions,
    ``held_out`` of them (at least one) held out; torch's global seed set too (the network's init)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=gen)
    n_held = max(1, int(n * held_out))
    return gen, order[:n_held], order[n_held:]


def fit_value(
    game,
    positions: Positions,
    hidden_size: int = 256,
    num_layers: int = 2,
    steps: int = 20000,
    batch_size: int = 1024,
    lr: float = 1e-3,
    held_out: float = 0.05,
    seed: int = 0,
    device: str | torch.device = "cpu",
    start: DeepCFRMLP | None = None,
    on_progress: Callable[[int, int, float], None] | None = None,
) -> tuple[DeepCFRMLP, dict]:
    """A value network fitted to ``positions`` by mean squared error (Adam, cosine decay; each batch
    relabelled by a random symmetry where the game has one), and its figures: the held-out mean
    squared error beside the targets' variance (the part of the outcome's variance it explains:
    ``explained``; ``chance_explained`` for the chance head, on the held-out draws).

    The state value is fitted on every position. Where the positions carry a teacher's values
    after each chance outcome (``collect_positions(teacher=...)``), the network has a chance head
    too, fitted to them on the positions before chance (every kind the draw could bring, weighed
    alike): the chance values then agree with the state values that follow, as the corrections'
    telescoping wants, and each position teaches every kind at once, not only the one drawn (fitted
    to the outcomes of the draws actually made instead, the head removed a tenth of the variance
    the enumeration did: docs/log/experiments.md). ``start``: a value network to continue from (a
    fit in pieces, or a state-value network growing a chance head: each kind starts as the state
    value). ``on_progress(step, steps, train mse)``."""
    gen, held, train = held_out_split(len(positions), held_out, seed)
    scale = float(positions.targets[train].std().clamp(min=1e-6))  # targets in units of their spread
    teacher = positions.chance_targets
    net = value_network(game, hidden_size, num_layers, chance_head=teacher is not None)
    if start is not None:
        _start_from(net, start)
        with torch.no_grad():  # its output layer gives points: back to units of the spread
            net.head.weight.div_(scale)
            net.head.bias.div_(scale)
    net = net.to(device)
    batch_loss = _BatchLoss(game, net, positions, scale, device)
    fit_steps(
        net,
        steps,
        lr,
        lambda: batch_loss(train[torch.randint(train.numel(), (batch_size,), generator=gen)], gen),
        on_progress,
        scale**2,
    )
    # The output layer was fitted to targets / scale: fold the scale into it.
    with torch.no_grad():
        net.head.weight.mul_(scale)
        net.head.bias.mul_(scale)
    net.eval()
    with torch.no_grad():
        preds = torch.cat(
            [net(encode_views(game, positions.views[chunk]).to(device)).cpu() for chunk in held.split(8192)]
        )
    info = {
        "positions": len(positions),
        "held_out": int(held.numel()),
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "continued": start is not None,
        **_explained("", preds[:, 0], positions.targets[held]),
    }
    if teacher is not None:
        info.update(_chance_explained(teacher[held], preds[:, 1:]))
    return net.cpu(), info


def fit_steps(
    net: nn.Module,
    steps: int,
    lr: float,
    next_loss: Callable[[], torch.Tensor],
    on_progress: Callable[[int, int, float], None] | None = None,
    report_scale: float = 1.0,
) -> None:
    """``steps`` Adam steps on ``next_loss()`` (a fresh batch's loss each call), the learning rate
    cosine-decayed to 0; ``on_progress(step, steps, running loss x report_scale)`` every 500 steps and
    at the last: the fitted artefacts' training loop (value function, hand belief)."""
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    running = None
    for step in range(1, steps + 1):
        loss = next_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        # kept on the device: the host reads it only to report (no sync a step)
        running = loss.detach() if running is None else running.mul_(0.98).add_(loss.detach(), alpha=0.02)
        if on_progress is not None and (step % 500 == 0 or step == steps):
            on_progress(step, steps, float(running) * report_scale)


class _BatchLoss:
    """The fit's loss on a batch of training rows (``__call__(idx, generator)``): the batch
    relabelled by a random symmetry where the game has one (both views alike, and the teacher's
    kinds with them), its targets in units of their spread (``scale``)."""

    def __init__(self, game, net: DeepCFRMLP, positions: Positions, scale: float, device: str | torch.device):
        self.game, self.net, self.scale, self.device = game, net, scale, device
        self.views, self.targets, self.teacher = positions.views, positions.targets, positions.chance_targets
        self.symmetry = capability(game, "symmetry") if has_capability(game, "symmetry") else None
        if (net.output_size > 1) != (self.teacher is not None):
            raise ValueError("a chance head is fitted to a teacher's values, and a teacher's values need a chance head")
        self.every_kind = torch.arange(net.output_size - 1)

    def _kind_columns(self, symmetry, relabel: torch.Tensor) -> torch.Tensor:
        """[n, kinds] the source column of each relabelled kind under ``symmetry``."""
        every_kind = self.every_kind
        inverse = symmetry.inverse(relabel)
        return symmetry.kinds(
            every_kind.expand(relabel.shape[0], -1).reshape(-1), inverse.repeat_interleave(every_kind.numel(), 0)
        ).reshape(relabel.shape[0], -1)

    def __call__(self, idx: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        game, symmetry, device, scale = self.game, self.symmetry, self.device, self.scale
        batch = self.views[idx]
        if symmetry is not None:  # the same relabelling of both views: a position the rules cannot tell apart
            relabel = symmetry.sample(idx.numel(), gen)
            batch = torch.stack([symmetry.obs(batch[:, 0], relabel), symmetry.obs(batch[:, 1], relabel)], dim=1)
        out = self.net(encode_views(game, batch).to(device))
        target = self.targets[idx].to(device) / scale
        loss = ((out[:, 0] - target) ** 2).mean()
        if self.teacher is not None:  # the chance head: every kind the draw could bring, toward the teacher's values
            taught = self.teacher[idx]
            if symmetry is not None:
                taught = taught.gather(1, self._kind_columns(symmetry, relabel))
            taught = taught.to(device) / scale
            known = ~taught.isnan()
            # every kind a target: a draw teaches all it could bring (weighed as one position, the
            # head fitted the centred values 0.44 of the way, not 0.54, in the mini game)
            loss = loss + ((out[:, 1:] - taught.nan_to_num()) ** 2 * known).sum() / known.any(1).sum().clamp(min=1)
        return loss


def _chance_explained(taught: torch.Tensor, head_values: torch.Tensor) -> dict:
    """The chance head's held-out figures on what the corrections use: each kind's value minus the
    draw's mean, the head's (``head_values``) beside the teacher's (``taught``)."""
    known = ~taught.isnan()
    drawn = known.any(1)
    taught, head_values, known = taught[drawn].nan_to_num(), head_values[drawn] * known[drawn], known[drawn]

    def centred(values):
        return (values - values.sum(1, keepdim=True) / known.sum(1, keepdim=True)) * known

    spread = float((centred(taught) ** 2).sum() / known.sum())
    error = float(((centred(head_values) - centred(taught)) ** 2).sum() / known.sum())
    return {
        "chance_teacher_spread": spread,
        "chance_held_out_mse": error,
        "chance_explained": 1.0 - error / spread if spread > 0 else float("nan"),
    }


def _explained(prefix: str, preds: torch.Tensor, targets: torch.Tensor) -> dict:
    mse = float(((preds - targets) ** 2).mean()) if targets.numel() else float("nan")
    var = float(targets.var()) if targets.numel() > 1 else float("nan")
    return {
        f"{prefix}held_out_mse": mse,
        f"{prefix}target_variance": var,
        f"{prefix}explained": 1.0 - mse / var if var > 0 else float("nan"),
    }


def _start_from(net: DeepCFRMLP, start: DeepCFRMLP) -> None:
    """Copy ``start``'s weights into ``net`` (the same body); a state-value head grows the chance
    head with each kind's row a copy of the state value's."""
    if start.body.state_dict().keys() != net.body.state_dict().keys() or any(
        a.shape != b.shape for a, b in zip(start.body.state_dict().values(), net.body.state_dict().values())
    ):
        raise ValueError(f"the start network's shape {start.shape_dict()} does not match {net.shape_dict()}")
    with torch.no_grad():
        net.body.load_state_dict(start.body.state_dict())
        if start.output_size not in (1, net.output_size):
            raise ValueError(f"the start network has {start.output_size} outputs, not 1 or {net.output_size}")
        rows = (
            torch.arange(net.output_size)
            if start.output_size == net.output_size
            else torch.zeros(net.output_size, dtype=torch.long)
        )
        net.head.weight.copy_(start.head.weight[rows])
        net.head.bias.copy_(start.head.bias[rows])


# ------------------------------------------------------------------------------ files
def save_game_network(path: str | Path, kind: str, key: str, game, net: DeepCFRMLP, trained_on: dict) -> Path:
    """Write ``net`` atomically as a checkpoint of ``kind`` (under ``key``) made for ``game``, its meta
    saying what it was trained on: the value function's and the hand belief's files."""
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        **game_meta(game),
        "network": net.shape_dict(),
        "trained_on": trained_on,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    return save_checkpoint(path, {"meta": meta, key: cpu_state(net)})


def game_network_for(
    path: str | Path,
    kind: str,
    key: str,
    what: str,
    command: str,
    game,
    device: str | torch.device = "cpu",
    required: bool = False,
) -> tuple[DeepCFRMLP, dict] | None:
    """(the network, the meta) of the checkpoint of ``kind`` at ``path`` if it was made for ``game``,
    else None, or with ``required`` a CheckpointError naming both games; a file of another kind (or
    a corrupt one) raises CheckpointError naming ``what`` it is not and the ``command`` that makes one."""
    payload = load_checkpoint(path)
    meta = payload["meta"]
    if meta.get("kind") != kind or key not in payload:
        raise CheckpointError(f"{path} is not a {what} (kind {meta.get('kind')!r}); make one with `{command}`")
    found = {k: meta.get(k) for k in ("game", "game_version", "game_config")}
    if found != game_meta(game):
        if required:
            raise CheckpointError(f"{what} {path} was made for {found}, not {game_meta(game)}")
        return None
    shape = meta["network"]
    net = DeepCFRMLP(shape["input_size"], shape["output_size"], shape["hidden_size"], shape["num_layers"])
    net.load_state_dict(payload[key])
    return net.to(device), meta


def save_value_function(path: str | Path, value: FullStateValue) -> Path:
    """Write the value function atomically as a checkpoint of kind ``value_function``."""
    return save_game_network(path, VALUE_FUNCTION, "value_net", value.game, value.net, value.trained_on)


def load_value_function(
    path: str | Path, game, device: str | torch.device = "cpu", required: bool = True
) -> FullStateValue | None:
    """A saved value function, refused (CheckpointError) unless it was made for ``game`` (its name,
    version and rules); with ``required=False`` None for another game's (a file that is not a value
    function, or is corrupt, raises CheckpointError either way)."""
    found = game_network_for(
        path, VALUE_FUNCTION, "value_net", "value function", "deepcfr fit-value", game, device, required
    )
    return FullStateValue(game, found[0], found[1].get("trained_on")) if found is not None else None
