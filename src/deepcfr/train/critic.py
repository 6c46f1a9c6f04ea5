"""The critic of ``traversal.algorithm: critic`` (ESCHER-style): one Q network per player, its
window of recent on-policy samples, its training, and the regret targets it fills in.

After a player's critic traversals, the nodes that played sigma after the game's one exploration
(``on_policy_tail``) are unbiased samples of ``Q(I, a)`` under sigma: (obs, action taken, final
utility). The critic is fitted to them (MSE at the action taken) and then values every legal
action of every visited node: ``target(I, a) = Q(I, a) - sum_b sigma(b) Q(I, b)``, with no
importance weight. With ``critic.sees_opponent`` the critic also reads the opponent's observation,
so it values the history rather than the information set.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from deepcfr.cfr.memory import WindowMemory
from deepcfr.checkpoints import cpu_state, optimizer_state

from .fit import DRAW_ROWS, Fitter, TailMean

CRITIC_ROWS = 65536  # rows per critic forward when filling in regret targets


class Critic:
    """Both players' critics. ``new_network(input_size)`` and ``new_optimizer(net, lr)`` come from
    the trainer (so that parameter init draws from its seeded stream); ``fitter`` supplies batch
    relabelling, mixed precision and the optimiser step."""

    def __init__(
        self,
        config,
        game,
        fitter: Fitter,
        new_network: Callable,
        new_optimizer: Callable,
        memory_device: torch.device,
        pin_memory: bool,
        log: Callable[[str], None],
    ):
        self.config = config  # the `critic` section
        self.game = game
        self.fitter = fitter
        self.device = fitter.device
        self.log = log
        inputs = int(game.feature_size) * (2 if config.sees_opponent else 1)
        self.nets = [new_network(inputs) for _ in range(2)]
        self.optimizers = [new_optimizer(net, config.lr) for net in self.nets]
        obs_spec = ((game.obs_size,), game.obs_dtype)
        fields = {"obs": obs_spec, "action": ((), torch.int16), "utility": ((), torch.float32)}
        if config.sees_opponent:
            fields["opponent_obs"] = obs_spec
        self.memories = [
            WindowMemory(config.capacity, fields, device=memory_device, pin_memory=pin_memory) for _ in range(2)
        ]
        self.scale: float | None = None  # utilities are divided by it: the RMS of the first utilities

    def phase(self, player: int, advantage: list, label: str) -> tuple[list, float]:
        """After ``player``'s traversals: add their on-policy nodes to the window, train the
        critic, and return the traversals' samples with their regret targets filled in (and the
        critic's loss)."""
        advantage = [samples for samples in advantage if samples["obs"].shape[0]]
        for samples in advantage:
            self.add_samples(player, samples)
        loss = self.train(player, label)
        return [self.targets(player, samples) for samples in advantage], loss

    def add_samples(self, player: int, samples: Mapping[str, torch.Tensor]) -> None:
        """The traverser nodes that played sigma after them: (obs, action taken, utility)."""
        keep = torch.nonzero(samples["on_policy_tail"]).squeeze(1)
        utility = samples["utility"][keep].float()
        if self.scale is None and utility.numel():
            rms = float(utility.pow(2).mean())
            self.scale = max(math.sqrt(rms), 1e-6) if math.isfinite(rms) else 1.0
            self.log(f"critic value scale set to {self.scale:.4g} (RMS of the first utilities)")
        extra = {"opponent_obs": samples["opponent_obs"][keep]} if self.config.sees_opponent else {}
        self.memories[player].add(  # generator named: ``extra`` holds only sample fields
            generator=None,
            obs=samples["obs"][keep],
            action=samples["action"][keep].to(torch.int16),
            utility=utility,
            **extra,
        )

    def features(self, obs: torch.Tensor, opponent_obs: torch.Tensor | None) -> torch.Tensor:
        features = self.game.encode(obs)
        if opponent_obs is None:
            return features
        return torch.cat([features, self.game.encode(opponent_obs)], dim=1)

    def _draw(self, memory: WindowMemory, rows: int):
        """``rows`` samples (relabelled when augmenting): features, actions, scaled utilities."""
        fitter = self.fitter
        batch = memory.sample(rows, generator=fitter.generator, device=self.device)
        obs, opponent_obs, actions = batch["obs"], batch.get("opponent_obs"), batch["action"].long()
        relabel = fitter.relabelling(obs.shape[0])
        if relabel is not None:
            symmetry = self.game.symmetry
            obs, actions = symmetry.obs(obs, relabel), symmetry.actions(actions, relabel)
            opponent_obs = None if opponent_obs is None else symmetry.obs(opponent_obs, relabel)
        if self.scale is None:  # set by the first samples added
            raise ValueError("the critic has no samples to fit: its value scale is set by the first")
        return self.features(obs, opponent_obs), actions, batch["utility"] / self.scale

    def train(self, player: int, label: str) -> float:
        """Fit ``player``'s critic ``Q(I, a)`` to the final utilities in its window (MSE at the
        action taken); returns the mean loss of the last quarter of the steps (in value-scale units)."""
        cfg, fitter = self.config, self.fitter
        memory = self.memories[player]
        if len(memory) == 0 or cfg.train_steps == 0:
            return math.nan
        net, optimizer = self.nets[player], self.optimizers[player]
        steps, batch_size = cfg.train_steps, cfg.batch_size
        steps_per_draw = max(1, DRAW_ROWS // batch_size)
        keep_from = steps - max(1, steps // 4)
        tail = TailMean()
        net.train()
        with fitter.bar(label, steps) as bar:
            for step in range(steps):
                j = step % steps_per_draw
                if j == 0:
                    t0 = time.perf_counter()
                    features, actions, values = self._draw(memory, min(steps_per_draw, steps - step) * batch_size)
                    fitter.batch_seconds += time.perf_counter() - t0
                part = slice(j * batch_size, (j + 1) * batch_size)
                with fitter.amp.autocast():
                    outputs = net(features[part])
                q = outputs.float().gather(1, actions[part, None]).squeeze(1)
                loss = (q - values[part]).square().mean()
                finite = fitter.optimise(net, optimizer, loss, cfg.grad_clip)
                if step >= keep_from:
                    tail.add(loss, finite)
                if bar is not None:
                    bar.advance(1)
        net.eval()
        return tail.mean()

    @torch.no_grad()
    def targets(self, player: int, samples: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``samples`` with ``target = Q(I, .) - sum_a sigma(a) Q(I, a)`` on legal actions
        (zero elsewhere), ``Q`` being ``player``'s critic in utility units, and ``value`` [m] =
        ``sum_a sigma(a) Q(I, a)``."""
        net = self.nets[player]
        target = torch.zeros_like(samples["target"])
        values = torch.zeros(target.shape[0], dtype=torch.float32, device=target.device)
        for start in range(0, target.shape[0], CRITIC_ROWS):
            rows = slice(start, start + CRITIC_ROWS)
            mask = samples["mask"][rows].to(self.device)
            opponent_obs = samples["opponent_obs"][rows].to(self.device) if self.config.sees_opponent else None
            with self.fitter.amp.autocast():
                q = net(self.features(samples["obs"][rows].to(self.device), opponent_obs))
            q = torch.where(mask, q.float() * self.scale, 0.0)
            value = (samples["sigma"][rows].to(self.device) * q).sum(dim=1, keepdim=True)
            target[rows] = ((q - value) * mask).to(target.device)
            values[rows] = value.squeeze(1).to(values.device)
        return {**samples, "target": target, "value": values}

    def metrics(self) -> dict[str, float]:
        return {f"memory/critic_p{p}_size": len(memory) for p, memory in enumerate(self.memories)}

    # ------------------------------------------------------------------ state
    def state_dict(self, with_memories: bool) -> dict[str, Any]:
        return {
            "nets": [cpu_state(net) for net in self.nets],
            "optimizers": [optimizer_state(opt) for opt in self.optimizers],
            "memories": [m.state_dict() for m in self.memories] if with_memories else None,
            "scale": self.scale,
        }

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        if state is None:
            raise ValueError("checkpoint has no critic networks, but traversal.algorithm is 'critic'")
        for net, opt, net_sd, opt_sd in zip(self.nets, self.optimizers, state["nets"], state["optimizers"]):
            net.load_state_dict(net_sd)
            opt.load_state_dict(opt_sd)
        if state.get("memories") is not None:
            for memory, sd in zip(self.memories, state["memories"]):
                memory.load_state_dict(sd)
        self.scale = state.get("scale", self.scale)
        for net in self.nets:
            net.eval()
