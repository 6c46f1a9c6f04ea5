"""Fitting a network to a replay memory: sample weights, losses, learning-rate schedules, batch
drawing (with the colour relabelling of ``memory.augment``), merged observations and the
optimiser step.

Training minimises a weighted loss ``sum_i w_i err_i / sum_i w_i`` where ``w_i`` comes from the
iteration that produced sample i (:func:`sample_weights`: linear CFR by default). With
``aggregate`` the memory's identical observations are merged first (summed weight, weighted mean
value): the same objective up to a constant, with far less gradient noise where observations
repeat (Kuhn, Leduc).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from deepcfr.cfr.memory import ReservoirMemory
from deepcfr.cfr.networks import masked_log_softmax
from deepcfr.cfr.samples import SampleCodec, row_keys
from deepcfr.host_syncs import to_device, to_host

from .amp import MixedPrecision

DRAW_ROWS = 16384  # training samples drawn and encoded per memory call (several steps' batches)
FINAL_LR_FRACTION = 0.05  # the final strategy training's cosine decay ends at 5% of its lr


def sample_weights(iteration: torch.Tensor, scheme: str, gamma: float = 2.0) -> torch.Tensor:
    """Per-sample loss weights from the iteration t that produced each sample: ``linear`` t
    (linear CFR), ``uniform`` 1, ``discounted`` t^gamma (DCFR's average-strategy weights)."""
    t = iteration.to(torch.float64).clamp(min=1)
    if scheme == "linear":
        w = t
    elif scheme == "uniform":
        w = torch.ones_like(t)
    elif scheme == "discounted":
        w = t.pow(gamma)
    else:
        raise ValueError(f"weighting must be linear, uniform or discounted, got {scheme!r}")
    return w.to(torch.float32)


def lr_factor(schedule: str, step: int, steps: int, final_fraction: float = 0.0) -> float:
    """Learning-rate multiplier at ``step`` of ``steps``: 1 at the start, ``final_fraction`` at
    the end (``cosine``), or 1 throughout (``constant``)."""
    if schedule == "constant" or steps <= 1:
        return 1.0
    if schedule != "cosine":
        raise ValueError(f"lr_schedule must be constant or cosine, got {schedule!r}")
    progress = step / (steps - 1)
    shape = 0.5 * (1.0 + math.cos(math.pi * progress))
    return final_fraction + (1.0 - final_fraction) * shape


def advantage_loss(
    outputs: torch.Tensor, mask: torch.Tensor, target: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """Weighted MSE over legal actions: ``sum_i w_i sum_a (out - target)^2 / sum_i w_i``.
    The difference is squared in float32: regret targets are large, fp16 squares overflow past 256."""
    diff = outputs.float() - target.float()
    err = (diff.square() * mask).sum(dim=1)
    return (weight * err).sum() / weight.sum()


def strategy_loss(logits: torch.Tensor, mask: torch.Tensor, policy: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Weighted cross-entropy of the masked softmax against the recorded sigma."""
    log_probs = masked_log_softmax(logits, mask)
    ce = -(policy * torch.where(mask, log_probs, torch.zeros_like(log_probs))).sum(dim=1)
    return (weight * ce).sum() / weight.sum()


class TailMean:
    """The mean of the finite losses of a fit's last steps, added up on the device: the host
    reads it once, at the end, instead of syncing on every step. Exactly the float64 mean of
    the float32 losses that reading each one would give."""

    def __init__(self) -> None:
        self.total: torch.Tensor | None = None
        self.count: torch.Tensor | None = None

    def add(self, loss: torch.Tensor, finite: torch.Tensor) -> None:
        value = torch.where(finite, loss.detach().double(), 0.0)
        self.total = value if self.total is None else self.total + value
        self.count = finite.long() if self.count is None else self.count + finite.long()

    def mean(self) -> float:
        """nan when no loss was added or none was finite."""
        if self.total is None or self.count is None:  # both set by the first add
            return math.nan
        total, count = to_host(torch.stack([self.total, self.count.double()]))
        return total / count if count else math.nan


@dataclass(frozen=True)
class FitSchedule:
    """How one fit runs: steps, batch size, peak learning rate and its schedule within the fit,
    gradient clip, and whether repeated observations are merged (config ``advantage`` /
    ``strategy``)."""

    steps: int
    batch_size: int
    lr: float
    lr_schedule: str = "constant"
    lr_final_fraction: float = 0.0
    grad_clip: float | None = None
    aggregate: bool = False

    @classmethod
    def of(cls, section: Any) -> FitSchedule:
        return cls(
            section.train_steps,
            section.batch_size,
            section.lr,
            section.lr_schedule,
            0.0,
            section.grad_clip,
            section.aggregate,
        )

    def replace(self, **changes: Any) -> FitSchedule:
        return dataclasses.replace(self, **changes)


class Fitter:
    """Fits networks to memories of packed samples on ``device``. Owns nothing random: every draw
    comes from ``generator`` (the trainer's checkpointed sample stream). Counts the time spent
    drawing and encoding batches (``batch_seconds``) and the skipped non-finite losses."""

    def __init__(
        self,
        game,
        codec: SampleCodec,
        device: torch.device,
        generator: torch.Generator,
        amp: MixedPrecision,
        augment: bool,
        progress: Callable[[str, int], Any] | None = None,
    ):
        self.game = game
        self.codec = codec
        self.device = device
        self.generator = generator
        self.amp = amp
        self.augment = augment
        self.progress = progress  # (label, total) -> context manager yielding a bar, or None
        self.batch_seconds = 0.0
        self._nonfinite_read = 0  # skipped steps counted on the host so far
        self._nonfinite: torch.Tensor | None = None  # and since then, on the device (no sync per step)

    @property
    def nonfinite_loss_count(self) -> int:
        """Steps skipped for a non-finite loss (reading it is one host sync)."""
        if self._nonfinite is not None:
            self._nonfinite_read += int(self._nonfinite)
            self._nonfinite = None
        return self._nonfinite_read

    @nonfinite_loss_count.setter
    def nonfinite_loss_count(self, value: int) -> None:
        self._nonfinite_read, self._nonfinite = int(value), None

    # ------------------------------------------------------------------ batches
    def relabelling(self, n: int) -> torch.Tensor | None:
        """A random symmetry per training row (memory.augment), else None."""
        if not self.augment:
            return None
        return self.game.symmetry.sample(n, generator=self.generator, device=self.device)

    def draw_batch(self, memory: ReservoirMemory, rows: int, value_name: str):
        """``rows`` samples drawn uniformly (relabelled when augmenting): features, mask, values, iteration."""
        batch = memory.sample(rows, generator=self.generator, device=self.device)
        obs = batch["obs"]
        mask = self.codec.unpack_mask(batch["mask"])
        values = self.codec.unpack_values(batch[value_name], mask)
        relabel = self.relabelling(obs.shape[0])
        if relabel is not None:
            obs = self.game.symmetry.obs(obs, relabel)
            columns = self.game.symmetry.action_columns(relabel)
            mask, values = mask.gather(1, columns), values.gather(1, columns)
        return self.game.encode(obs), mask, values, batch["iteration"]

    def aggregate_memory(self, memory: ReservoirMemory, value_name: str, weights_of) -> dict[str, torch.Tensor]:
        """The memory with identical observations merged: features, mask, weighted mean value and
        summed weight per distinct observation (the weighted loss over the memory is the same
        up to a constant). Identical observations have identical legal masks."""
        device = self.device
        obs = memory.data("obs").to(device)
        mask = self.codec.unpack_mask(memory.data("mask").to(device))
        values = self.codec.unpack_values(memory.data(value_name).to(device), mask).double()
        weight = weights_of(memory.data("iteration").to(device)).double()
        unique, inverse = torch.unique(row_keys(obs), return_inverse=True)
        groups = unique.shape[0]
        weight_sum = torch.zeros(groups, dtype=torch.float64, device=device).index_add_(0, inverse, weight)
        value_sum = torch.zeros(groups, values.shape[1], dtype=torch.float64, device=device)
        value_sum.index_add_(0, inverse, weight[:, None] * values)
        first = torch.full((groups,), obs.shape[0], dtype=torch.long, device=device)
        first.scatter_reduce_(0, inverse, torch.arange(obs.shape[0], device=device), reduce="amin")
        return {
            "features": self.game.encode(obs[first]),
            "mask": mask[first],
            "values": (value_sum / weight_sum.clamp(min=1e-300)[:, None]).float(),
            "weight": weight_sum.float(),
            "probs": (weight_sum / weight_sum.sum()).float(),
        }

    def aggregated_batch(self, table: dict[str, torch.Tensor], batch_size: int):
        """The whole table when it fits in a batch (exact full-batch gradient), else rows drawn
        in proportion to their weight (then equally weighted: the same expected gradient)."""
        rows = table["weight"].shape[0]
        if rows <= batch_size:
            return table["features"], table["mask"], table["values"], table["weight"]
        g = self.generator
        idx = to_device(
            torch.multinomial(table["probs"].to(g.device), batch_size, replacement=True, generator=g), self.device
        )
        return (
            table["features"][idx],
            table["mask"][idx],
            table["values"][idx],
            torch.ones(batch_size, device=self.device),
        )

    def _batches(self, memory, value_name: str, schedule: FitSchedule, weights_of):
        """(features, mask, values, weight) for each step. Batches are drawn several steps at a
        time (one sample/encode call for all of them): for small networks the per-call overhead
        would otherwise cost as much as the step itself."""
        steps, batch_size = schedule.steps, schedule.batch_size
        if schedule.aggregate:
            t0 = time.perf_counter()
            table = self.aggregate_memory(memory, value_name, weights_of)
            self.batch_seconds += time.perf_counter() - t0
            for _ in range(steps):
                t0 = time.perf_counter()
                batch = self.aggregated_batch(table, batch_size)
                self.batch_seconds += time.perf_counter() - t0
                yield batch
            return
        steps_per_draw = max(1, DRAW_ROWS // batch_size)
        for step in range(steps):
            j = step % steps_per_draw
            if j == 0:
                t0 = time.perf_counter()
                features, mask, values, iteration = self.draw_batch(
                    memory, min(steps_per_draw, steps - step) * batch_size, value_name
                )
                weight = weights_of(iteration).to(self.device)
                self.batch_seconds += time.perf_counter() - t0
            part = slice(j * batch_size, (j + 1) * batch_size)
            yield features[part], mask[part], values[part], weight[part]

    # ------------------------------------------------------------------ steps
    def optimise(self, net, optimizer, loss: torch.Tensor, grad_clip: float | None) -> torch.Tensor:
        """One step (scaled, unscaled before the clip, under fp16); a non-finite loss is skipped
        on the device (weights and optimizer state unchanged) and counted there. Returns the
        finite flag (a 0-dim bool tensor: no host sync)."""
        finite = self.amp.step(net.parameters(), optimizer, loss, grad_clip)
        skipped = (~finite).long()
        self._nonfinite = skipped if self._nonfinite is None else self._nonfinite + skipped
        return finite

    def bar(self, label: str, total: int):
        return self.progress(label, total) if self.progress is not None else nullcontext()

    def fit(
        self, net, forward, optimizer, memory, value_name: str, schedule: FitSchedule, weights_of, loss_fn, label: str
    ) -> float:
        """``schedule.steps`` steps of ``loss_fn(forward(features), mask, values, weight)``;
        returns the mean loss of the last quarter of the steps (nan when none was finite)."""
        steps = schedule.steps
        for group in optimizer.param_groups:
            group["lr"] = schedule.lr
        net.train()
        tail = TailMean()
        keep_from = steps - max(1, steps // 4)
        with self.bar(label, steps) as bar:
            batches = self._batches(memory, value_name, schedule, weights_of)
            for step in range(steps):
                if schedule.lr_schedule != "constant":
                    for group in optimizer.param_groups:
                        group["lr"] = schedule.lr * lr_factor(
                            schedule.lr_schedule, step, steps, schedule.lr_final_fraction
                        )
                features, mask, values, weight = next(batches)
                with self.amp.autocast():
                    outputs = forward(features)
                loss = loss_fn(outputs, mask, values, weight)
                finite = self.optimise(net, optimizer, loss, schedule.grad_clip)
                if step >= keep_from:
                    tail.add(loss, finite)
                if bar is not None:
                    bar.advance(1)
        net.eval()
        return tail.mean()


__all__ = ["FitSchedule", "Fitter", "TailMean", "advantage_loss", "lr_factor", "sample_weights", "strategy_loss"]
