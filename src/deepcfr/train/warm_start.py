"""Deep CFR from a policy: strategy-based warm start (Brown & Sandholm, AAAI 2016), config ``init``.

A run may start from a policy pi (a checkpoint's, the champion, a bot) instead of from uniform.
The spec is resolved above this layer (``deepcfr train --init SPEC`` builds the player through
``deepcfr.players.load_player``); the Trainer receives a :class:`StartPolicy`, a plain policy
callable, and :func:`warm_start` runs once, before iteration 1 (a resumed run never redoes it:
the checkpoint holds its result and records it under ``warm_start``).

What it does, and why:

1. **Positions**: ``init.games`` games of pi against itself, in lockstep, each move drawn from
   ``(1 - init.explore) pi + init.explore uniform``. Every decision is a position of its mover.
   The exploration reaches states pi itself avoids: in a traversal the traverser explores every
   action (external sampling) or some (outcome and critic sampling), so the opponent's sigma is
   asked off pi's path too. Positions weigh as often as they occur (measured: weighing each
   distinct information state once was no better on Leduc and worse on Liar's Dice); coverage
   is what counts: on Leduc from a 0.61 policy, 2000 games reach 719 of the 936 information states
   and regret matching on the fit plays 0.78, 10000 games reach 887 and it plays 0.62.
2. **Advantage networks play pi**: each player's advantage network is fitted (``init.train_steps``
   steps at ``init.lr`` on ``init.lr_schedule``, with ``advantage``'s batch size and aggregation) to the target
   ``pi(a)`` on the actions pi plays and ``-init.margin`` on the legal actions it never plays.
   Regret matching normalises the positive advantages, so these targets make sigma_1 = pi
   exactly wherever the fit is exact (the positive targets sum to 1, so an error e on one action
   moves sigma by about e); the negative margin keeps the actions pi never plays out of sigma
   whatever the fit's small errors. Advantages equal to the counterfactual regrets of pi
   (Brown & Sandholm's construction) would not do: regret matching on them plays a best-response-
   like policy, not pi. The fit is in the network's own units (regret targets are stored divided
   by a scale fixed at iteration 1); iteration 1 then fits the networks to pi's real regrets,
   starting from these weights, so Deep CFR continues from sigma_1 = pi as tabular CFR continues
   from any sigma_1.
3. **The average counts pi as ``init.weight`` iterations**: one traversal phase per player with
   sigma = the fitted networks (= pi) records the strategy samples an iteration of pi would
   record, with the same distribution over information states (the reach weighting of the
   average strategy), their recorded policy replaced by pi's own probabilities at each position
   (sigma_1 is pi only as far as the fit is exact: on Lost Cities from the champion the run's
   average was trained toward the fit's approximation, total variation 0.25, before this was
   fixed). They enter the strategy memory ``init.weight`` times, labelled iterations
   1..W, so under any ``strategy.weighting`` pi weighs in the average exactly as W iterations
   that all played pi (linear: 1 + 2 + ... + W); the run's own iterations keep their numbers
   1, 2, ... (so its schedules, league and checkpoints read as usual). The cost is W copies of
   one iteration's strategy samples in the memory. The strategy network starts as pi: a copy of
   the start's network where it has one of the run's shape (``StartPolicy.network``: pi exactly),
   else fitted to that memory at once (``strategy.train_steps``); on Kuhn/Leduc the exact average
   (``eval.exact_average``) adds pi with the same total weight.
   The advantage samples of those traversals are dropped: the advantage memory holds only the
   run's own regrets.

How exact sigma_1 is depends on the game: on Leduc regret matching on the fit plays 0.62 from a
0.61 start; on Lost Cities, from the champion (a distilled softmax over about 8 legal actions),
the mean total variation stays near 0.2-0.25 whatever was tried (more steps, a cut of the tail,
a cross-entropy term), while the average network, a copy of the champion's, is exact
(docs/log/results.md, "Deep CFR from a policy").

``init.weight: 0`` starts the current policy from pi and leaves the average to the run's own
iterations.

**Regularised toward pi** (``init.kl_temperature`` > 0; piKL: Jacob et al., "Modeling strong and
human-like gameplay with KL-regularized search", ICML 2022): a policy carries no regrets, so
regret matching from pi relearns them and its sigma_t leaves pi at once (on Lost Cities from the
champion, tens of points weaker than it). Instead sigma_t is the maximiser of
``<sigma, R> - T KL(sigma || pi)``, ``pi(a) exp(R(a) / T)`` (``cfr.regret_matching.kl_regularized``),
with R the advantage network's average regrets in the game's units: it moves from pi only where
the regrets are large against T. Step 2 is then skipped: the advantage networks stay untrained, so
sigma_1 is pi's network exactly, and a frozen copy of it (``Trainer.start_net``, network ``start``
in every executor) travels with the checkpoint. A bot is its own anchor: pi is the bot's moves
smoothed by ``init.smoothing`` of the uniform policy (a one-hot pi's logits would be out of the
regrets' reach), computed by the batched bot wherever sigma_t is (``Trainer.start_bot``, a bot by
name in every executor): on Lost Cities from ``heuristic_balanced`` at temperature 1 the run ends
above the bot, where toward a network fitted to it, which alone loses to it, it ended level
(docs/log/experiments.md, "A deeper critic, and the bot itself as the anchor"). Any other start
that is no network of the run's shape (a one-hot policy, another shape) is fitted by one first,
against pi smoothed the same way. Step 3 is unchanged. Measured in docs/log/results.md ("Regularised
toward the start").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, TypeGuard

import torch

from deepcfr.cfr.memory import ReservoirMemory
from deepcfr.cfr.networks import DeepCFRMLP, masked_softmax
from deepcfr.cfr.policies import UniformPolicy, mix_uniform, uniform_probs
from deepcfr.cfr.regret_matching import regret_matching
from deepcfr.cfr.samples import memory_fields
from deepcfr.cfr.traversal import TraversalStats
from deepcfr.games.base import Policy, sample_from_probs

from .fit import FitSchedule, advantage_loss, strategy_loss


@dataclass(frozen=True)
class StartPolicy:
    """The policy a run starts from: ``policy(obs, mask) -> probs [n, A]`` (any callable, for the
    run's game) and the spec it was built from (the config's ``init.spec``, for logs and checks)."""

    policy: Policy
    spec: str
    # the network whose masked softmax ``policy`` is (a checkpoint's average policy, the
    # champion), or None: where its shape is the run's, the strategy network starts as a copy
    network: torch.nn.Module | None = None
    # the bot ``policy`` plays, by name (a start that is a bot): with ``init.kl_temperature``,
    # sigma_t is regularised toward that bot itself, not toward a network fitted to it
    bot: str | None = None

    @classmethod
    def uniform(cls, spec: str = "random") -> StartPolicy:
        """Uniform over the legal actions (``random``: a cold start, with pi counted in the average)."""
        return cls(UniformPolicy(), spec)


def sample_positions(
    game, policy: Policy, games: int, explore: float, generator: torch.Generator, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(obs, mask) of every decision of ``games`` games of ``policy`` against itself (moves drawn
    from ``(1 - explore) policy + explore uniform``), one pair per player. ``generator`` may be a
    CPU generator for games on another device (a device generator is seeded from it)."""
    device = torch.device(device)
    if generator.device.type != device.type:
        generator = torch.Generator(device=device).manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    state = game.init(games, generator=generator, device=device)
    found: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[], []]
    for _ in range(int(game.max_game_length) + 1):
        live = ~game.is_terminal(state)
        if not bool(live.any()):
            break
        player = torch.where(live, game.current_player(state), 0)
        obs, mask = game.observe(state, player), game.legal_mask(state)
        rows = live.nonzero().squeeze(1)  # the policy is asked about live positions only
        probs = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
        probs[rows] = policy(obs[rows], mask[rows]).float().to(mask.device) * mask[rows]
        probs = probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)
        actions = sample_from_probs(
            torch.where(live[:, None], mix_uniform(probs, mask, explore), uniform_probs(mask)), generator
        )
        for p in range(2):
            mine = (live & (player == p)).nonzero().squeeze(1)
            if mine.numel():
                found[p].append((obs[mine], mask[mine]))
        state = game.step(state, actions)
    return [(torch.cat([o for o, _ in rows]), torch.cat([m for _, m in rows])) for rows in found]


def advantage_targets(probs: torch.Tensor, mask: torch.Tensor, margin: float) -> torch.Tensor:
    """Targets whose regret matching is ``probs``: ``probs`` where positive, ``-margin`` on the
    legal actions of probability 0, 0 on illegal ones (module docstring, step 2)."""
    mask = mask.bool()
    probs = probs.float() * mask
    probs = probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)
    return torch.where(probs > 0, probs, torch.where(mask, -float(margin), 0.0))


def policy_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Total-variation distance per row ``[n]``: half the L1 difference of two policies."""
    return 0.5 * (a.float() - b.float()).abs().sum(dim=1)


def strategy_weight(trainer, weight: int) -> float:
    """The total weight of iterations 1..``weight`` in the average strategy (``strategy.weighting``)."""
    if weight <= 0:
        return 0.0
    return float(trainer.strategy_weights(torch.arange(1, weight + 1)).double().sum())


def _same_shape(network: torch.nn.Module | None, strategy_net: DeepCFRMLP) -> TypeGuard[torch.nn.Module]:
    shape = getattr(network, "shape_dict", None)
    return shape is not None and shape() == strategy_net.shape_dict()


def start_policy_samples(
    samples: dict[str, torch.Tensor], policy: Policy, chunk: int = 65536
) -> dict[str, torch.Tensor]:
    """Strategy samples of a traversal with their recorded ``policy`` replaced by the start
    policy's probabilities at the same positions. The traversal plays sigma_1, regret matching on
    the fitted advantage networks, which is the start policy only as far as the fit is exact (on
    Lost Cities from the champion: total variation 0.25); the average must count pi itself."""
    obs, mask = samples["obs"], samples["mask"].bool()
    probs = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    with torch.no_grad():
        for i in range(0, obs.shape[0], chunk):
            probs[i : i + chunk] = policy(obs[i : i + chunk], mask[i : i + chunk]).float().to(mask.device)
    probs = probs * mask
    probs = probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)
    return {**samples, "policy": probs.to(samples["policy"].dtype)}


def _fit_schedule(section, cfg) -> FitSchedule:
    """A fit from scratch to the start: the fitted network's batch (``section``: advantage or
    strategy), init's steps, learning rate and schedule."""
    return FitSchedule.of(section).replace(steps=cfg.train_steps, lr=cfg.lr, lr_schedule=cfg.lr_schedule)


def _start_memory(
    trainer, obs: torch.Tensor, mask: torch.Tensor, value_name: str, values: torch.Tensor
) -> ReservoirMemory:
    """A memory of exactly the positions ``obs``/``mask`` with their ``values`` (packed as the field
    ``value_name``), all of iteration 1: what a fit to the start policy draws from."""
    codec = trainer.codec
    memory = ReservoirMemory(obs.shape[0], memory_fields(trainer.game, codec, value_name), device=trainer.device)
    packed, _ = codec.pack_values(values, mask)
    fields = {"obs": obs, "mask": codec.pack_mask(mask), value_name: packed}
    memory.add(trainer.generators["memory"], **fields, iteration=torch.ones(obs.shape[0], dtype=torch.int32))
    return memory


def _unit_weights(iteration: torch.Tensor) -> torch.Tensor:
    """Every sample of a fit to the start policy weighs 1."""
    return torch.ones_like(iteration, dtype=torch.float32)


def fit_advantages_to_start(trainer, start: StartPolicy) -> dict[str, Any]:
    """Fit each advantage network so that regret matching plays ``start.policy`` (module docstring,
    steps 1 and 2); figures: positions, losses, total variation between the two on the positions."""
    cfg = trainer.config.init
    game, device = trainer.game, trainer.device
    positions = sample_positions(game, start.policy, cfg.games, cfg.explore, trainer.generators["init"], device)
    figures: dict[str, Any] = {}
    fallback = trainer.config.regret_matching.fallback
    for p, (obs, mask) in enumerate(positions):
        with torch.no_grad():
            probs = start.policy(obs, mask).float().to(mask.device)
        memory = _start_memory(trainer, obs, mask, "target", advantage_targets(probs, mask, cfg.margin))
        net = trainer.advantage_nets[p]
        # the fit has an optimizer of its own and the run's stays fresh: Adam's second moments from
        # the fit's last, tiny gradients would make iteration 1's first steps several times too large
        figures[f"init/advantage_loss_p{p}"] = trainer.fitter.fit(
            net,
            trainer.forward_for_training(f"advantage_{p}"),
            trainer.new_optimizer(net, cfg.lr),
            memory,
            "target",
            _fit_schedule(trainer.config.advantage, cfg),
            _unit_weights,
            advantage_loss,
            f"init advantage p{p}",
        )
        trainer.advantage_trained[p] = True
        with torch.no_grad():
            played = regret_matching(net(game.encode(obs.to(device))), mask.to(device), fallback)
        distance = policy_distance(played.cpu(), probs.cpu() * mask.cpu())
        figures[f"init/positions_p{p}"] = int(obs.shape[0])
        figures[f"init/policy_distance_p{p}"] = float(distance.mean())
        figures[f"init/policy_distance_max_p{p}"] = float(distance.max())

    return figures


def start_regularized(trainer, start: StartPolicy) -> dict[str, Any]:
    """``init.kl_temperature``: what sigma_t is regularised toward: a bot itself (by name, its
    moves smoothed by ``init.smoothing``), else a frozen network: a copy of the start's network
    where it has the run's shape (its masked softmax: a greedy spec's network is regularised
    toward as sampled), else one of the run's shape fitted to the start policy
    (:func:`fit_start_network`: another shape, a one-hot policy). The advantage networks stay
    untrained, so sigma_1 is that start policy exactly."""
    if start.bot is not None:
        trainer.start_bot = start.bot
        return {}
    net = trainer.new_network()
    figures: dict[str, Any] = {}
    if _same_shape(start.network, trainer.strategy_net):
        net.load_state_dict(start.network.state_dict())
    else:
        figures = fit_start_network(trainer, start, net)
    trainer.start_net = net.eval().requires_grad_(False)
    return figures


def fit_start_network(trainer, start: StartPolicy, net: torch.nn.Module) -> dict[str, Any]:
    """Fit ``net`` (the run's shape) so that its masked softmax plays ``start.policy``: cross-entropy
    (the strategy network's loss and batch, ``init``'s steps, learning rate and schedule) against
    the policy mixed with ``init.smoothing`` of the uniform one, on the decisions of ``init.games``
    games of it (``init.explore`` of the moves uniform). The smoothing keeps every legal action's
    logit within reach of the regrets: a deterministic policy (a bot) would otherwise fit logits
    that no regret in the game's units could move. Figures: positions, loss, total variation
    between the fitted network's policy and the start's."""
    cfg = trainer.config.init
    game, device = trainer.game, trainer.device
    positions = sample_positions(game, start.policy, cfg.games, cfg.explore, trainer.generators["init"], device)
    obs = torch.cat([o for o, _ in positions])
    mask = torch.cat([m for _, m in positions])
    with torch.no_grad():
        probs = start.policy(obs, mask).float().to(mask.device) * mask
    probs = probs / probs.sum(dim=1, keepdim=True).clamp(min=1e-30)
    memory = _start_memory(trainer, obs, mask, "policy", mix_uniform(probs, mask, cfg.smoothing))
    loss = trainer.fitter.fit(
        net,
        net,
        trainer.new_optimizer(net, cfg.lr),
        memory,
        "policy",
        _fit_schedule(trainer.config.strategy, cfg),
        _unit_weights,
        strategy_loss,
        "init start network",
    )
    with torch.no_grad():  # in chunks: a Lost Cities start has hundreds of thousands of positions
        played = torch.cat(
            [
                masked_softmax(net(game.encode(obs[i : i + 65536].to(device))), mask[i : i + 65536].to(device)).cpu()
                for i in range(0, obs.shape[0], 65536)
            ]
        )
    distance = policy_distance(played, probs.cpu())
    return {
        "init/start_positions": int(obs.shape[0]),
        "init/start_loss": loss,
        "init/start_distance": float(distance.mean()),
    }


def warm_start(trainer, start: StartPolicy) -> dict[str, Any]:
    """Start ``trainer`` (a Trainer at iteration 0) from ``start.policy`` (module docstring); returns
    figures of the start: positions per player, the fits' losses, and the mean and largest
    total-variation distance between regret matching on the fitted networks and pi on the positions."""
    cfg = trainer.config.init
    if trainer.iteration != 0:
        raise ValueError(
            f"warm start from {start.spec!r}: the trainer is at iteration {trainer.iteration}; "
            "a run starts from a policy once, before iteration 1"
        )
    t0 = time.perf_counter()
    figures: dict[str, Any] = {}
    if cfg.kl_temperature > 0:
        figures.update(start_regularized(trainer, start))
    else:
        figures.update(fit_advantages_to_start(trainer, start))
    total = strategy_weight(trainer, cfg.weight)
    if cfg.weight > 0:
        stats = TraversalStats()
        for p in range(2):
            _, strategy = trainer.traverse_player(p, stats)
            for samples in strategy:
                samples = start_policy_samples(samples, start.policy)
                for t in range(1, cfg.weight + 1):
                    trainer.add_strategy_samples({**samples, "iteration": torch.full_like(samples["iteration"], t)})
        if _same_shape(start.network, trainer.strategy_net):
            trainer.strategy_net.load_state_dict(start.network.state_dict())  # the average is pi exactly
            trainer.strategy_trained = True
            figures["init/strategy_copied"] = 1
        elif trainer.config.strategy.train_steps > 0:
            figures["init/strategy_loss"] = trainer.train_strategy()
        if trainer.exact_average is not None and trainer.config.traversal.opponent == "current":
            for p in range(2):
                trainer.exact_average.accumulate(p, start.policy, total)
    figures["init/average_weight"] = total
    figures["init/seconds"] = time.perf_counter() - t0
    trainer.warm_start_record = {"spec": start.spec, "weight": int(cfg.weight)}
    copied = ", its network a copy of the start's" if figures.get("init/strategy_copied") else ""
    if cfg.kl_temperature > 0:
        fitted = (
            f" (a network fitted to it on {figures['init/start_positions']} positions, smoothing "
            f"{cfg.smoothing:g}: total variation {figures['init/start_distance']:.3g})"
            if "init/start_distance" in figures
            else ""
        )
        if trainer.start_bot is not None:
            current = (
                f"sigma_t regularised toward the bot itself (its moves, smoothing {cfg.smoothing:g}) at "
                f"temperature {cfg.kl_temperature:g} (sigma_1 is that policy)"
            )
        else:
            current = (
                f"sigma_t regularised toward its network{fitted} at temperature {cfg.kl_temperature:g} "
                "(sigma_1 is that network's policy)"
            )
    else:
        distances = ", ".join(
            f"p{p} mean {figures[f'init/policy_distance_p{p}']:.3g} max {figures[f'init/policy_distance_max_p{p}']:.3g}"
            for p in range(2)
        )
        current = (
            f"advantage networks fitted on {figures['init/positions_p0']} + {figures['init/positions_p1']} "
            f"positions (regret matching vs the start policy, total variation: {distances})"
        )
    trainer.log(
        f"started from {start.spec!r}: {current}; the average counts it as {cfg.weight} "
        f"iteration(s) (weight {total:g}){copied}; {figures['init/seconds']:.1f}s"
    )
    return figures


def maybe_warm_start(trainer, start: StartPolicy | None) -> dict[str, Any] | None:
    """:func:`warm_start` when the config names a start policy and the run has not started yet
    (iteration 0, no warm start recorded); None otherwise. A config that names one without a
    ``start`` given, or a ``start`` for another spec, is an error naming the spec."""
    spec = trainer.config.init.spec
    if spec is None:
        if start is not None:
            raise ValueError(
                f"a start policy ({start.spec!r}) was given but the config's init.spec is not set "
                "(the config records what a run started from)"
            )
        return None
    if trainer.iteration != 0 or trainer.warm_start_record is not None:
        return None
    if start is None:
        raise ValueError(
            f"init.spec {spec!r} names a start policy, but the Trainer was given none: pass "
            "start=StartPolicy(...) (deepcfr train builds it with deepcfr.players.load_player)"
        )
    if start.spec != spec:
        raise ValueError(f"the start policy given is {start.spec!r}, but init.spec is {spec!r}")
    return warm_start(trainer, start)


__all__ = [
    "StartPolicy",
    "advantage_targets",
    "maybe_warm_start",
    "policy_distance",
    "sample_positions",
    "start_policy_samples",
    "strategy_weight",
    "warm_start",
]
