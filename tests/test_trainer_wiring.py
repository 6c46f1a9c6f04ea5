"""The trainer's wiring: who plays whom in a traversal, whose strategy is recorded (strategy memory
and exact average), and that each configured weighting reaches the fit. Each test fails under a
bug planted in the trainer: the opponent playing the traverser's own network, the exact average
collecting the wrong player's sigma, a configured weighting replaced by another."""

import pytest
import torch

from deepcfr.cfr.policies import RegretMatchingPolicy
from deepcfr.train.config import load_config
from deepcfr.train.fit import sample_weights
from deepcfr.train.trainer import Trainer

ITERATIONS = torch.tensor([1, 2, 3, 7], dtype=torch.int32)


def leduc(*extra):
    return Trainer(
        load_config(
            None,
            [
                "game.name=leduc",
                "memory.augment=false",
                "traversal.algorithm=external",
                "traversal.traversals_per_player=64",
                "traversal.chunk_size=32",
                "network.hidden_size=16",
                "advantage.train_steps=20",
                "advantage.batch_size=64",
                "advantage.lr=0.01",
                "strategy.train_steps=4",
                "strategy.batch_size=32",
                "strategy.final_train_steps=0",
                "eval.every=0",
                "memory.advantage_capacity=2000",
                "memory.strategy_capacity=2000",
                "run.progress=false",
                *extra,
            ],
        )
    )


def sigma(trainer, player, obs, mask):
    net = trainer.advantage_nets[player]
    return RegretMatchingPolicy(net, trainer.game.encode, trainer.config.regret_matching.fallback)(obs, mask)


def test_each_traversal_plays_the_traverser_against_the_other_players_sigma():
    trainer = leduc()
    trainer.run_iteration()  # both advantage networks trained: sigma_t is theirs now
    game = trainer.game
    obs, mask = game.enumerate_infostates()
    # the two players' networks give different strategies, so a swap shows
    assert not torch.allclose(sigma(trainer, 0, obs, mask), sigma(trainer, 1, obs, mask))
    for player in (0, 1):
        chunks, networks = trainer.traversal_chunks(player)
        assert all(c.traverser == player for c in chunks)
        assert {c.traverser_policy.network for c in chunks} == {f"advantage_{player}"}
        assert {c.opponent_policy.network for c in chunks} == {f"advantage_{1 - player}"}
        assert networks[f"advantage_{1 - player}"] is trainer.advantage_nets[1 - player]
        results = trainer.executor().run(networks, chunks)
        for result in results:
            adv, strat = result.advantage, result.strategy
            assert (game.obs_player(adv["obs"]) == player).all()  # regrets of the traverser's nodes
            assert strat["obs"].shape[0] > 0 and (game.obs_player(strat["obs"]) == 1 - player).all()
            # the opponent's recorded strategy is the opponent's sigma_t, not the traverser's
            torch.testing.assert_close(strat["policy"], sigma(trainer, 1 - player, strat["obs"], strat["mask"]))


def test_the_exact_average_collects_each_opponents_own_sigma_with_the_strategy_weight():
    trainer = leduc("strategy.weighting=discounted", "strategy.discount_gamma=2")
    obs, mask = trainer.game.enumerate_infostates()
    calls = []
    real = trainer.exact_average.accumulate

    def spy(player, policy, weight):
        got = policy(obs, mask)
        trained = all(trainer.advantage_trained)  # both sigma_t are networks, and they differ
        own = trained and torch.allclose(got, sigma(trainer, player, obs, mask))
        other = trained and torch.allclose(got, sigma(trainer, 1 - player, obs, mask))
        calls.append((trainer.iteration, player, weight, trained, own, other))
        real(player, policy, weight)

    trainer.exact_average.accumulate = spy
    for _ in range(3):
        trainer.run_iteration()
    # before player p's traversals, the opponent 1 - p's sigma_t as it plays there
    assert [(t, p) for t, p, *_ in calls] == [(t, p) for t in (1, 2, 3) for p in (1, 0)]
    for t, _player, weight, trained, own, other in calls:
        assert weight == pytest.approx(t**2)  # weighted like the strategy memory (t^gamma)
        assert own == trained and not other
    assert sum(trained for *_, trained, _, _ in calls) >= 4


@pytest.mark.parametrize("weighting", ["linear", "uniform"])
def test_the_configured_advantage_weighting_reaches_the_fit(weighting):
    trainer = leduc(f"advantage.weighting={weighting}", "strategy.weighting=linear")
    fits = []
    real_fit = trainer.fitter.fit

    def spy(net, forward, optimizer, memory, value_name, schedule, weights_of, loss_fn, label):
        fits.append((value_name, weights_of(ITERATIONS)))
        return real_fit(net, forward, optimizer, memory, value_name, schedule, weights_of, loss_fn, label)

    trainer.fitter.fit = spy
    trainer.run_iteration()
    advantage = [w for name, w in fits if name == "target"]
    assert len(advantage) == 2
    for w in advantage:
        assert torch.equal(w, sample_weights(ITERATIONS, weighting))


@pytest.mark.parametrize("weighting", ["linear", "uniform", "discounted"])
@pytest.mark.parametrize("aggregate", [False, True])
def test_the_configured_strategy_weighting_reaches_the_fit_and_its_batches(weighting, aggregate):
    trainer = leduc(
        f"strategy.weighting={weighting}",
        "strategy.discount_gamma=3",
        "advantage.weighting=uniform",
        f"strategy.aggregate={str(aggregate).lower()}",
        "strategy.final_train_steps=2",
    )
    expected = sample_weights(ITERATIONS, weighting, 3.0)
    assert not torch.equal(expected, sample_weights(ITERATIONS, "uniform")) or weighting == "uniform"
    losses = []
    real_fit = trainer.fitter.fit

    def spy(net, forward, optimizer, memory, value_name, schedule, weights_of, loss_fn, label):
        if value_name == "policy":
            assert torch.equal(weights_of(ITERATIONS), expected)

            # the weights the loss sees are those of the rows' iterations
            def checked_loss(outputs, mask, values, weight):
                losses.append(weight.detach().clone())
                return loss_fn(outputs, mask, values, weight)

            return real_fit(net, forward, optimizer, memory, value_name, schedule, weights_of, checked_loss, label)
        return real_fit(net, forward, optimizer, memory, value_name, schedule, weights_of, loss_fn, label)

    trainer.fitter.fit = spy
    trainer.run_iteration()
    trainer.run_iteration()  # the memory now holds iterations 1 and 2
    trainer.train_final_strategy()
    assert losses
    allowed = sample_weights(torch.tensor([1, 2]), weighting, 3.0)
    for weight in losses:
        if aggregate:  # merged rows carry summed weights: w1 * n1 + w2 * n2 for integer counts
            continue
        assert set(weight.unique().tolist()) <= set(allowed.tolist())
    if not aggregate and weighting != "uniform":
        assert any(len(set(w.unique().tolist())) == 2 for w in losses)
