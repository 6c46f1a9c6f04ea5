"""What each traversal chunk plays (deepcfr.train.trainer's step 1): the traverser's sigma_t, and
the opponent ``traversal.opponent`` names (sigma_t, the average strategy, or a league draw: sigma_t,
a past snapshot or the anchor), as chunk policies (``PolicySpec``) over the networks they name.

``TraversalPolicies`` reads the ``Trainer`` through its public attributes only; it owns what only
it uses: the league anchor, the snapshot networks in use, and this iteration's traversals per
opponent label (the Trainer's ``opponent_counts``)."""

from __future__ import annotations

from typing import Any

import torch

from deepcfr.cfr.networks import DeepCFRMLP, build_network
from deepcfr.parallel.chunks import ChunkSpec, PolicySpec, chunk_sizes
from deepcfr.seeding import chunk_seed

from .config import NetworkConfig


def anchor_policy(anchor: Any, text: str, network: NetworkConfig) -> tuple[PolicySpec, Any]:
    """The league anchor (``anchor``: the player ``text`` names) as a chunk policy and its networks
    (a bot: none; a checkpoint's average policy: its strategy network; its current policy: one
    advantage network per seat); ``network``: the run's network, which a checkpoint's must match."""
    if hasattr(anchor, "bot"):
        return PolicySpec("bot", bot=anchor.bot.name), None
    agent = getattr(anchor, "agent", None)
    if agent is None or anchor.greedy:
        raise ValueError(
            f"league.anchor {text!r}: the anchor is a bot or a checkpoint's sampled policy "
            "(PATH, PATH@current, champion); traversal samples from it"
        )
    if agent.config.network != network:
        raise ValueError(
            f"league.anchor {text!r}: the checkpoint's network differs from this run's "
            "(the anchor's network travels to the workers with this run's shapes)"
        )
    if anchor.kind == "current":
        return PolicySpec("regret", "anchor"), [net.eval() for net in agent.advantage_nets]
    return PolicySpec("strategy", "anchor"), {"anchor": agent.strategy_net.eval()}


class TraversalPolicies:
    """The chunk policies of ``trainer``'s traversals; ``anchor``: the league anchor's policy and
    networks (``anchor_policy``), or None."""

    def __init__(self, trainer, anchor: tuple[PolicySpec, Any] | None):
        self.trainer = trainer
        self.anchor = anchor
        self.snapshot_nets: dict[str, DeepCFRMLP] = {}  # league snapshots in use, by network name
        self.counts: dict[str, int] = {}  # this iteration's traversals per opponent label

    def sigma_spec(self, player: int, networks: dict[str, torch.nn.Module]) -> PolicySpec:
        """sigma_t of ``player`` as a chunk policy: regret matching on its advantage network
        (uniform before that network trained); with ``init.kl_temperature``, its advantages over
        the start network or bot (the start policy itself before that network trained)."""
        t = self.trainer
        smoothing = t.config.init.smoothing
        if t.start_bot is not None:
            if not t.advantage_trained[player]:
                return PolicySpec("bot", bot=t.start_bot, smoothing=smoothing)
        elif t.start_net is not None:
            networks["start"] = t.start_net
            if not t.advantage_trained[player]:
                return PolicySpec("strategy", "start")
        elif not t.advantage_trained[player]:
            return PolicySpec("uniform")
        name = f"advantage_{player}"
        networks[name] = t.advantage_nets[player]
        if t.start_bot is not None:
            return PolicySpec(
                "regularized",
                name,
                bot=t.start_bot,
                smoothing=smoothing,
                temperature=t.agent().kl_temperature_units(),
            )
        if t.start_net is not None:
            return PolicySpec("regularized", name, start="start", temperature=t.agent().kl_temperature_units())
        return PolicySpec("regret", name)

    def opponent_spec(self, opponent: int, networks: dict[str, torch.nn.Module]) -> tuple[PolicySpec, bool, str]:
        """(policy, plays sigma_t, label) for one chunk; adds the networks it uses to ``networks``."""
        t = self.trainer
        mode = t.config.traversal.opponent
        if mode == "current":
            return self.sigma_spec(opponent, networks), True, "current"
        if mode == "average":
            networks["strategy"] = t.strategy_net
            return PolicySpec("strategy", "strategy"), False, "average"
        choice = t.league.sample(has_anchor=self.anchor is not None)
        if choice.kind == "current":
            return self.sigma_spec(opponent, networks), True, "current"
        if choice.kind == "anchor" and self.anchor is not None:  # sampled only with an anchor
            spec, nets = self.anchor
            if spec.kind == "regret":  # the anchor's sigma for the seat it plays
                networks[f"anchor_p{opponent}"] = nets[opponent]
                return PolicySpec("regret", f"anchor_p{opponent}"), False, "anchor"
            networks.update(nets or {})
            return spec, False, "anchor"
        name = f"snapshot_{choice.iteration}_p{opponent}"
        if name not in self.snapshot_nets:
            net = build_network(t.config.network, t.feature_size, t.num_actions).to(t.device)
            net.load_state_dict(t.league.snapshot(choice.index, opponent))
            self.snapshot_nets[name] = net.eval()
        networks[name] = self.snapshot_nets[name]
        return PolicySpec("regret", name), False, choice.category

    def chunks(self, player: int) -> tuple[list[ChunkSpec], dict[str, torch.nn.Module]]:
        """The trainer's ``traversal_chunks``: this iteration's traversals for ``player`` as chunks,
        and the networks they name."""
        t = self.trainer
        cfg = t.config.traversal
        options = cfg.options()
        fallback = t.config.regret_matching.fallback
        networks: dict[str, torch.nn.Module] = {}
        traverser_policy = self.sigma_spec(player, networks)
        # One draw per phase from the trainer's (checkpointed) traversal stream seeds every chunk.
        g = t.generators["traversal"]
        phase_seed = int(torch.randint(0, 2**62, (1,), generator=g))
        chunks = []
        for index, n in enumerate(chunk_sizes(cfg.traversals_per_player, cfg.chunk_size)):
            opponent_policy, on_policy, label = self.opponent_spec(1 - player, networks)
            seed = chunk_seed(phase_seed, t.iteration, player, index)
            chunks.append(
                ChunkSpec(
                    index,
                    n,
                    seed,
                    player,
                    t.iteration,
                    traverser_policy,
                    opponent_policy,
                    on_policy,
                    options,
                    fallback,
                    label,
                )
            )
            self.counts[label] = self.counts.get(label, 0) + n
        live = {f"snapshot_{it}_p{p}" for it, _ in t.league.snapshots for p in range(2)}
        self.snapshot_nets = {k: v for k, v in self.snapshot_nets.items() if k in live}
        return chunks, networks
