"""sigma_t regularised toward the start policy (issue 37; config ``init.kl_temperature``, piKL):
the rule is the maximiser of <sigma, R> - T KL(sigma || pi); a run plays the start policy exactly
at iteration 1, then its advantages over it; checkpoints, agents and worker processes carry the
start network; bad settings are named. Exact exploitability on Leduc."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import LEDUC_FAST
from deepcfr.cfr.networks import masked_softmax
from deepcfr.cfr.policies import StrategyNetPolicy, greedy
from deepcfr.cfr.regret_matching import kl_regularized
from deepcfr.checkpoints import load_checkpoint, save_checkpoint
from deepcfr.evaluate.exploitability import exploitability
from deepcfr.train.agent import load_agent
from deepcfr.train.config import ConfigError, load_config
from deepcfr.train.trainer import Trainer
from deepcfr.train.warm_start import StartPolicy, _fit_schedule, policy_distance, sample_positions, warm_start


def leduc(*extra):
    return load_config("leduc/default.yaml", [*LEDUC_FAST, "init.spec=start", *extra])


# ------------------------------------------------------------------------------------------------
# The rule
# ------------------------------------------------------------------------------------------------


def test_rule_is_the_start_reweighted_by_the_advantages():
    mask = torch.tensor([[True, True, True], [True, False, True]])
    start_logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, 9.0, 0.0]])
    adv = torch.tensor([[1.0, 0.0, -1.0], [0.5, 7.0, 0.0]])
    pi = masked_softmax(start_logits, mask)
    expected = pi * torch.exp(adv / 2.0) * mask
    expected = expected / expected.sum(dim=1, keepdim=True)
    got = kl_regularized(adv, start_logits, mask, 2.0)
    assert torch.allclose(got, expected, atol=1e-6) and bool((got[~mask] == 0).all())
    assert torch.allclose(kl_regularized(torch.zeros_like(adv), start_logits, mask, 0.1), pi, atol=1e-6)
    assert torch.allclose(kl_regularized(adv + torch.tensor([[5.0], [-3.0]]), start_logits, mask, 2.0), got, atol=1e-6)
    assert torch.allclose(kl_regularized(adv, start_logits, mask, 1e6), pi, atol=1e-4)  # T large: the start
    cold = kl_regularized(adv, start_logits, mask, 1e-4)  # T small: the best legal action by R
    assert cold[0, 0] > 0.999 and cold[1, 0] > 0.999  # row 1's action 1 (R 7) is illegal
    assert torch.isfinite(kl_regularized(torch.full_like(adv, float("inf")), start_logits, mask, 1e-3)).all()
    # a start that rules an action out (logit -inf) against an infinite regret: a distribution, not nan
    ruled_out = start_logits.clone()
    ruled_out[:, 0] = -float("inf")
    odd = kl_regularized(torch.full_like(adv, float("inf")), ruled_out, mask, 1e-3)
    assert torch.isfinite(odd).all() and torch.allclose(odd.sum(dim=1), torch.ones(2))
    with pytest.raises(ValueError, match="temperature"):
        kl_regularized(adv, start_logits, mask, 0.0)
    with pytest.raises(ValueError, match="equal"):
        kl_regularized(adv[:, :2], start_logits, mask, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.floats(0.05, 20.0), st.integers(0, 10_000))
def test_rule_maximises_the_regularised_objective(actions, temperature, seed):
    """No distribution over the legal actions scores more on <sigma, R> - T KL(sigma || pi)."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(1, actions, generator=g) < 0.8
    mask[0, 0] = True
    adv = torch.randn(1, actions, generator=g) * 5
    start_logits = torch.randn(1, actions, generator=g) * 2
    pi = masked_softmax(start_logits, mask).double()
    sigma = kl_regularized(adv, start_logits, mask, temperature).double()

    def objective(p):
        legal = mask & (p > 0)
        kl = (p[legal] * (p[legal].log() - pi[legal].log())).sum()
        return float((p * adv.double()).sum() - temperature * kl)

    best = objective(sigma)
    for _ in range(20):
        other = torch.rand(1, actions, generator=g).double() * mask
        other = other / other.sum()
        assert objective(other) <= best + 1e-6
        mixed = 0.9 * sigma + 0.1 * other  # near the optimum too
        assert objective(mixed) <= best + 1e-6


# ------------------------------------------------------------------------------------------------
# A run regularised toward its start
# ------------------------------------------------------------------------------------------------


def _started(start, *extra) -> Trainer:
    _, policy, _, network = start
    trainer = Trainer(leduc(*extra))
    warm_start(trainer, StartPolicy(policy, "start", network))
    return trainer


def _assert_same_advantage_nets(a: Trainer, b: Trainer) -> None:
    for x, y in zip(a.advantage_nets, b.advantage_nets):
        assert all(torch.equal(p, q) for p, q in zip(x.state_dict().values(), y.state_dict().values()))


def _distance(trainer, policy, player_policy=None, seed=7):
    positions = sample_positions(trainer.game, policy, 500, 0.25, torch.Generator().manual_seed(seed), trainer.device)
    out = []
    for p, (obs, mask) in enumerate(positions):
        mine = player_policy or trainer.current_policy_of(p)
        out.append(policy_distance(mine(obs, mask), policy(obs, mask) * mask))
    return torch.cat(out)


def test_iteration_1_plays_the_start_exactly_then_its_advantages_over_it(partly_trained):
    """No advantage fit: the networks stay untrained and sigma_1 is the start network's policy
    (total variation 0); the chunks play it by name; after an iteration sigma_t is the rule on the
    trained advantage network at the temperature in its output units (kl / target scale)."""
    torch.set_num_threads(1)
    _, policy, _, _ = partly_trained
    trainer = _started(partly_trained, "init.kl_temperature=0.5", "init.weight=2")
    assert trainer.advantage_trained == [False, False] and trainer.start_net is not None
    assert float(_distance(trainer, policy).max()) < 1e-6
    chunks, networks = trainer.traversal_chunks(0)
    assert chunks[0].traverser_policy.kind == "strategy" and chunks[0].opponent_policy.network == "start"
    assert networks["start"] is trainer.start_net
    trainer.run_iteration()
    assert trainer.advantage_trained == [True, True]
    chunks, networks = trainer.traversal_chunks(1)
    spec = chunks[0].traverser_policy
    assert (spec.kind, spec.network, spec.start) == ("regularized", "advantage_1", "start")
    assert math.isclose(spec.temperature, 0.5 / trainer.target_scale)
    assert {"advantage_1", "advantage_0", "start"} <= set(networks)
    moved = _distance(trainer, policy)
    assert float(moved.mean()) > 1e-3  # the regrets moved it
    # the start network is frozen: the run trains only the advantage and strategy networks
    assert all(not p.requires_grad for p in trainer.start_net.parameters())


def test_temperature_sets_how_far_sigma_moves_and_a_small_one_learns(partly_trained):
    """(Leduc, exact) From a policy of exploitability e0 (0.68), 6 iterations: a large temperature
    (100 chips) keeps sigma_t within 0.02 total variation of the start; at 1 chip the exact average
    falls below e0 - 0.05 and the current policy below e0 itself (measured: 0.54 and 0.46), where
    regret matching from the same start, fitted, reaches 0.59 and its current policy jumps to 1.25
    (at 0.3 chips: 0.55 and 0.71; at 0.1: 0.75 and 2.8, as noisy as regret matching)."""
    torch.set_num_threads(1)
    _, policy, e0, _ = partly_trained
    near = _started(partly_trained, "init.kl_temperature=100")
    for _ in range(3):
        near.run_iteration()
    assert float(_distance(near, policy).mean()) < 0.02
    learning = _started(partly_trained, "init.kl_temperature=1")
    for _ in range(6):
        learning.run_iteration()
    agent = learning.agent()
    mixture = exploitability(learning.game, agent.policy("mixture")).exploitability
    current = exploitability(learning.game, agent.policy("current")).exploitability
    assert mixture < e0 - 0.05, (e0, mixture, current)
    assert current < e0, (e0, mixture, current)


def test_checkpoint_carries_the_start_network_and_resumes_exactly(partly_trained, tmp_path):
    """The agent of a saved run plays the same current policy (its start network and target scale
    travel in the checkpoint); a trainer loaded from it continues as the uninterrupted one did; a
    checkpoint of such a run without its start network is refused by name."""
    torch.set_num_threads(1)
    trainer = _started(partly_trained, "init.kl_temperature=0.5", "init.weight=1")
    trainer.run_iteration()
    path = trainer.write_checkpoint(tmp_path / "kl.pt")
    agent = load_agent(path)
    _, policy, _, _ = partly_trained
    for p in range(2):
        assert float(_distance(trainer, agent.current_policy_of(p), trainer.current_policy_of(p)).max()) < 1e-6
    resumed = Trainer(leduc("init.kl_temperature=0.5", "init.weight=1"))
    resumed.load_state_dict(load_checkpoint(path))
    trainer.run_iteration()
    resumed.run_iteration()
    _assert_same_advantage_nets(trainer, resumed)
    payload = load_checkpoint(path)
    payload["start_net"] = None
    broken = save_checkpoint(tmp_path / "broken.pt", payload)
    with pytest.raises(ValueError, match="start network"):
        load_agent(broken)
    with pytest.raises(ValueError, match="start network"):
        Trainer(leduc("init.kl_temperature=0.5", "init.weight=1")).load_state_dict(payload)


def test_worker_processes_give_the_inline_run(partly_trained):
    """The start network travels to worker processes like the advantage networks: two iterations
    with processes give the inline run's networks and samples exactly."""
    torch.set_num_threads(1)
    states = {}
    for executor in ("inline", "processes"):
        with _started(
            partly_trained,
            "init.kl_temperature=0.5",
            "init.weight=1",
            f"traversal.executor={executor}",
            "traversal.num_workers=2",
            "traversal.chunk_size=250",
        ) as trainer:
            for _ in range(2):
                trainer.run_iteration()
            states[executor] = (
                [p.detach().clone() for net in trainer.advantage_nets for p in net.parameters()],
                trainer.strategy_memory.data("policy").clone(),
            )
    (a, sa), (b, sb) = states["inline"], states["processes"]
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and torch.equal(sa, sb)


def test_bad_settings_are_named():
    with pytest.raises(ConfigError, match="init.kl_temperature"):
        load_config("leduc/default.yaml", [*LEDUC_FAST, "init.kl_temperature=1"])  # no start policy
    with pytest.raises(ConfigError, match="league"):
        leduc("init.kl_temperature=1", "traversal.opponent=league")
    with pytest.raises(ConfigError, match="init.kl_temperature"):
        leduc("init.kl_temperature=-1")
    with pytest.raises(ConfigError, match="init.smoothing"):
        leduc("init.kl_temperature=1", "init.smoothing=1")
    # a Trainer without the start network would play regret matching in its place: refused by name
    trainer = Trainer(leduc("init.kl_temperature=1", "init.spec=random"))
    with pytest.raises(ValueError, match="start network"):
        trainer.run_iteration()
    assert trainer.iteration == 0


def test_a_start_without_a_network_is_fitted_by_one(partly_trained):
    """A start that is no network of the run's shape (a bot, a one-hot policy, another shape) is
    fitted by one (cross-entropy against the policy smoothed by init.smoothing): sigma_1 is that
    network's policy exactly, which puts the start's own action first at nearly every position and
    keeps every legal action's probability above the smoothing's share."""
    torch.set_num_threads(1)
    _, policy, _, _ = partly_trained
    one_hot = lambda obs, mask: greedy(policy(obs, mask), mask)  # noqa: E731
    trainer = Trainer(leduc("init.kl_temperature=1", "init.smoothing=0.1", "init.train_steps=600"))
    figures = warm_start(trainer, StartPolicy(one_hot, "start"))
    assert figures["init/start_positions"] > 10_000 and figures["init/start_distance"] < 0.15, figures
    assert trainer.advantage_trained == [False, False]
    fitted = StrategyNetPolicy(trainer.start_net, trainer.game.encode)
    positions = sample_positions(trainer.game, one_hot, 500, 0.0, torch.Generator().manual_seed(3), trainer.device)
    for p, (obs, mask) in enumerate(positions):
        played = trainer.current_policy_of(p)(obs, mask)
        assert float(policy_distance(played, fitted(obs, mask)).max()) < 1e-6  # sigma_1 is the fitted network
        agree = (played.argmax(dim=1) == one_hot(obs, mask).argmax(dim=1)).float().mean()
        assert float(agree) > 0.95, float(agree)
        several = mask.sum(dim=1) > 1
        assert float(played[several].masked_fill(~mask[several], 1.0).min()) > 0.01


@pytest.mark.parametrize("kl_temperature", [0, 1])  # the advantage networks' fit / the start network's
def test_the_fits_learning_rate_and_schedule_are_inits(partly_trained, kl_temperature):
    """A fit from scratch on a fixed set of positions takes init.lr and init.lr_schedule, not the
    run's per-iteration settings: with those too small to move a network, the fit still comes
    close to the start policy at init's learning rate, constant or cosine-decayed, and stays far
    from it at a learning rate too small to move it."""
    torch.set_num_threads(1)
    _, policy, _, _ = partly_trained
    distance = "init/start_distance" if kl_temperature else "init/policy_distance_p0"

    def fit(lr, schedule):
        trainer = Trainer(
            leduc(
                f"init.kl_temperature={kl_temperature}",
                "init.train_steps=300",
                "advantage.lr=1e-9",
                "strategy.lr=1e-9",
                f"init.lr={lr}",
                f"init.lr_schedule={schedule}",
            )
        )
        return warm_start(trainer, StartPolicy(policy, "start"))[distance]

    still = fit(1e-9, "constant")
    assert still > 0.2, still
    assert fit(1e-3, "constant") < still / 2
    assert fit(3e-3, "cosine") < still / 2
    # the schedule is init's too; the batch stays the fitted network's section's
    config = leduc("init.lr_schedule=cosine", "init.lr=0.003", "init.train_steps=300", "advantage.batch_size=96")
    schedule = _fit_schedule(config.advantage, config.init)
    assert (schedule.steps, schedule.lr, schedule.lr_schedule, schedule.batch_size) == (300, 0.003, "cosine", 96)


def _lost_cities_mini(*extra):
    return load_config(
        None,
        [
            "game.name=lost_cities",
            "game.variant=mini",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=32",
            "network.hidden_size=32",
            "advantage.train_steps=5",
            "advantage.batch_size=64",
            "strategy.train_steps=5",
            "strategy.batch_size=64",
            "critic.train_steps=5",
            "critic.batch_size=64",
            "eval.every=0",
            "memory.advantage_capacity=20000",
            "memory.strategy_capacity=20000",
            "run.progress=false",
            "init.spec=heuristic_balanced",
            "init.kl_temperature=1",
            "init.weight=1",
            "strategy.final_train_steps=0",
            *extra,
        ],
    )


def _bot_started(*extra) -> Trainer:
    from deepcfr.cfr.policies import BotPolicy
    from deepcfr.games.bots import make_bot

    trainer = Trainer(_lost_cities_mini(*extra))
    bot = make_bot(trainer.game, "heuristic_balanced")
    warm_start(trainer, StartPolicy(BotPolicy(bot), "heuristic_balanced", bot="heuristic_balanced"))
    return trainer


def test_a_bot_start_is_its_own_anchor(tmp_path):
    """From a bot, sigma_t is regularised toward the bot itself (its moves smoothed by
    init.smoothing), not toward a network fitted to it: no start network, sigma_1 is the smoothed
    bot exactly, every chunk policy names the bot, and the agent of a saved run (and a trainer
    resumed from it) plays the same current policy."""
    from deepcfr.cfr.policies import SmoothedBotPolicy
    from deepcfr.games.bots import make_bot

    torch.set_num_threads(1)
    trainer = _bot_started("init.smoothing=0.2")
    assert trainer.start_bot == "heuristic_balanced" and trainer.start_net is None
    bot = make_bot(trainer.game, "heuristic_balanced")
    smoothed = SmoothedBotPolicy(bot, 0.2)
    positions = sample_positions(trainer.game, smoothed, 40, 0.25, torch.Generator().manual_seed(1), trainer.device)
    for p, (obs, mask) in enumerate(positions):
        played = trainer.current_policy_of(p)(obs, mask)
        assert torch.allclose(played, smoothed(obs, mask), atol=1e-6)
        moves = bot.act(obs, mask).long()
        assert torch.allclose(
            played.gather(1, moves[:, None]).squeeze(1), 0.8 + 0.2 / mask.sum(dim=1).float(), atol=1e-6
        )
    networks = {}
    assert trainer.policies.sigma_spec(0, networks).kind == "bot" and not networks
    trainer.run_iteration()
    spec = trainer.policies.sigma_spec(1, networks)
    assert (spec.kind, spec.bot, spec.start, spec.smoothing) == ("regularized", "heuristic_balanced", None, 0.2)
    assert "start" not in networks
    # after the iteration the advantages move sigma_t away from the bot, through kl_regularized
    obs, mask = positions[0]
    advantages = trainer.advantage_nets[0](trainer.game.encode(obs)).detach()
    expected = kl_regularized(
        advantages, smoothed(obs, mask).clamp(min=1e-30).log(), mask, trainer.agent().kl_temperature_units()
    )
    assert torch.allclose(trainer.current_policy_of(0)(obs, mask), expected, atol=1e-5)
    assert not torch.allclose(expected, smoothed(obs, mask), atol=1e-3)
    path = trainer.write_checkpoint(tmp_path / "bot.pt")
    agent = load_agent(path)
    assert agent.start_bot == "heuristic_balanced" and agent.start_net is None
    for p, (obs, mask) in enumerate(positions):
        assert torch.allclose(agent.current_policy_of(p)(obs, mask), trainer.current_policy_of(p)(obs, mask), atol=1e-6)
        assert torch.equal(
            agent.current_policy_of(p, greedy=True)(obs, mask), greedy(trainer.current_policy_of(p)(obs, mask), mask)
        )
    resumed = Trainer(_lost_cities_mini("init.smoothing=0.2"))
    resumed.load_state_dict(load_checkpoint(path))
    assert resumed.start_bot == "heuristic_balanced"
    trainer.run_iteration()
    resumed.run_iteration()
    _assert_same_advantage_nets(trainer, resumed)
    payload = load_checkpoint(path)
    payload["start_bot"] = None
    with pytest.raises(ValueError, match="start network or bot"):
        Trainer(_lost_cities_mini("init.smoothing=0.2")).load_state_dict(payload)


def test_worker_processes_regularise_toward_the_bot_as_inline():
    """The bot anchor is built by name in each worker: two iterations with processes give the
    inline run's networks exactly."""
    torch.set_num_threads(1)
    states = {}
    for executor in ("inline", "processes"):
        with _bot_started(f"traversal.executor={executor}", "traversal.num_workers=2") as trainer:
            for _ in range(2):
                trainer.run_iteration()
            states[executor] = [p.detach().clone() for net in trainer.advantage_nets for p in net.parameters()]
    assert all(torch.equal(x, y) for x, y in zip(states["inline"], states["processes"]))


def test_a_regularized_chunk_policy_names_one_start():
    from deepcfr.parallel.chunks import PolicySpec

    with pytest.raises(ValueError, match="not both"):
        PolicySpec("regularized", "advantage_0", bot="heuristic_balanced", start="start", temperature=1.0)
    with pytest.raises(ValueError, match="not both"):
        PolicySpec("regularized", "advantage_0", temperature=1.0)
