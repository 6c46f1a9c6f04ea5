"""train/fit: sample weights, the two losses (illegal actions never count), learning-rate
schedules, merged observations and the Fitter's loop (it lowers the loss, weights samples by
their iteration, skips non-finite losses, relabels drawn samples by the game's symmetry)."""

from __future__ import annotations

import math

import pytest
import torch

from deepcfr.cfr.memory import ReservoirMemory
from deepcfr.cfr.networks import DeepCFRMLP
from deepcfr.cfr.samples import SampleCodec, max_legal_actions, memory_fields
from deepcfr.games.base import sample_uniform_legal
from deepcfr.games.registry import make_game
from deepcfr.train.amp import MixedPrecision
from deepcfr.train.fit import FitSchedule, Fitter, TailMean, advantage_loss, lr_factor, sample_weights, strategy_loss

torch.set_num_threads(1)


# ------------------------------------------------------------------ weights and schedules
def test_sample_weights_per_scheme():
    t = torch.tensor([0, 1, 2, 5], dtype=torch.int32)
    assert sample_weights(t, "linear").tolist() == [1.0, 1.0, 2.0, 5.0]  # iteration 0 weighs as 1
    assert sample_weights(t, "uniform").tolist() == [1.0] * 4
    assert sample_weights(t, "discounted", gamma=3.0).tolist() == [1.0, 1.0, 8.0, 125.0]
    assert sample_weights(t, "linear").dtype == torch.float32
    with pytest.raises(ValueError, match="weighting must be linear, uniform or discounted, got 'square'"):
        sample_weights(t, "square")


def test_lr_factor_constant_and_cosine():
    assert [lr_factor("constant", s, 10) for s in range(10)] == [1.0] * 10
    cosine = [lr_factor("cosine", s, 11, final_fraction=0.05) for s in range(11)]
    assert cosine[0] == 1.0 and cosine[-1] == pytest.approx(0.05)
    assert cosine[5] == pytest.approx(0.05 + 0.95 * 0.5)  # halfway down
    assert all(a > b for a, b in zip(cosine, cosine[1:]))
    assert lr_factor("cosine", 0, 1) == 1.0  # a one-step fit keeps its learning rate
    with pytest.raises(ValueError, match="lr_schedule must be constant or cosine, got 'linear'"):
        lr_factor("linear", 1, 10)


def test_tail_mean_counts_only_finite_losses():
    tail = TailMean()
    assert math.isnan(tail.mean())
    for value in (1.0, float("nan"), 3.0, float("inf")):
        loss = torch.tensor(value)
        tail.add(loss, torch.isfinite(loss))
    assert tail.mean() == 2.0
    none_finite = TailMean()
    none_finite.add(torch.tensor(float("nan")), torch.tensor(False))
    assert math.isnan(none_finite.mean())


# ------------------------------------------------------------------ losses
def test_advantage_loss_is_the_weighted_mse_over_legal_actions():
    outputs = torch.tensor([[1.0, 2.0, 50.0], [0.0, 0.0, 0.0]])
    target = torch.tensor([[0.0, 0.0, -50.0], [1.0, 1.0, 1.0]])
    mask = torch.tensor([[True, True, False], [True, False, True]])
    weight = torch.tensor([1.0, 3.0])
    # row 0: 1 + 4 (the illegal third action does not count); row 1: 1 + 1
    assert float(advantage_loss(outputs, mask, target, weight)) == pytest.approx((1 * 5 + 3 * 2) / 4)
    moved = outputs.clone()
    moved[~mask] = 1e6  # whatever the network says about illegal actions
    assert float(advantage_loss(moved, mask, target, weight)) == float(advantage_loss(outputs, mask, target, weight))


def test_advantage_loss_squares_in_float32_under_fp16():
    # 300 squared is past float16's largest value (65504): the difference is squared in float32
    outputs = torch.full((2, 2), 300.0, dtype=torch.float16)
    target = torch.zeros(2, 2, dtype=torch.float16)
    loss = advantage_loss(outputs, torch.ones(2, 2, dtype=torch.bool), target, torch.ones(2))
    assert torch.isfinite(loss) and float(loss) == pytest.approx(2 * 300.0**2)


def test_strategy_loss_ignores_illegal_actions_and_is_least_at_the_target():
    mask = torch.tensor([[True, True, False, True]])
    policy = torch.tensor([[0.5, 0.25, 0.0, 0.25]])
    weight = torch.ones(1)
    at_target = torch.log(policy.clamp(min=1e-12))
    best = float(strategy_loss(at_target, mask, policy, weight))
    assert best == pytest.approx(-(0.5 * math.log(0.5) + 0.5 * math.log(0.25)), rel=1e-5)  # the entropy
    moved = at_target.clone()
    moved[0, 2] = 30.0  # an illegal logit gets no probability, so the loss stays
    assert float(strategy_loss(moved, mask, policy, weight)) == pytest.approx(best, rel=1e-6)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        other = at_target + torch.randn(at_target.shape, generator=generator)
        assert float(strategy_loss(other, mask, policy, weight)) > best
    # weights: a heavier row pulls the weighted mean towards its cross-entropy
    two = strategy_loss(
        torch.cat([at_target, torch.zeros(1, 4)]), mask.repeat(2, 1), policy.repeat(2, 1), torch.tensor([1.0, 3.0])
    )
    flat = float(strategy_loss(torch.zeros(1, 4), mask, policy, weight))
    assert float(two) == pytest.approx((best + 3 * flat) / 4, rel=1e-5)


# ------------------------------------------------------------------ the Fitter
def _fitter(game, augment: bool = False, seed: int = 0):
    codec = SampleCodec(game.num_actions, max_legal_actions(game), torch.float32)
    fitter = Fitter(
        game, codec, torch.device("cpu"), torch.Generator().manual_seed(seed), MixedPrecision("off", "cpu"), augment
    )
    return fitter, codec


def _positions(game, n_games: int, seed: int):
    """(observations, legal masks) of the player to move at every decision of random games."""
    generator = torch.Generator().manual_seed(seed)
    state = game.init(n_games, generator)
    obs, masks = [], []
    while not bool(game.is_terminal(state).all()):
        live = ~game.is_terminal(state)
        mask = game.legal_mask(state)
        player = game.current_player(state).clamp(min=0)
        for p in (0, 1):
            rows = live & (player == p)
            obs.append(game.observe(state, p)[rows])
            masks.append(mask[rows])
        state = game.step(state, sample_uniform_legal(mask, generator))
    return torch.cat(obs), torch.cat(masks)


def _memory(game, codec, obs, mask, values, iteration, value_name: str = "target"):
    memory = ReservoirMemory(obs.shape[0], memory_fields(game, codec, value_name))
    packed, _ = codec.pack_values(values, mask)
    memory.add(obs=obs, mask=codec.pack_mask(mask), **{value_name: packed}, iteration=iteration.to(torch.int32))
    return memory


def _whole_memory_loss(game, net, obs, mask, target, weight) -> float:
    with torch.no_grad():
        return float(advantage_loss(net(game.encode(obs)), mask, target * mask, weight))


def test_fitting_lowers_the_advantage_loss_and_reports_the_last_quarter():
    game = make_game("leduc")
    fitter, codec = _fitter(game)
    obs, mask = _positions(game, 64, seed=1)
    # a target the features determine: a fixed random linear map of them
    target = game.encode(obs) @ torch.randn(
        game.feature_size, game.num_actions, generator=torch.Generator().manual_seed(2)
    )
    iteration = torch.randint(1, 6, (obs.shape[0],), generator=torch.Generator().manual_seed(3))
    memory = _memory(game, codec, obs, mask, target, iteration)
    torch.manual_seed(0)
    net = DeepCFRMLP(game.feature_size, game.num_actions, 32, 2)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    weight = sample_weights(iteration, "linear")
    before = _whole_memory_loss(game, net, obs, mask, target, weight)
    seen = []

    def recorded_loss(*args):
        loss = advantage_loss(*args)
        seen.append(float(loss.detach()))
        return loss

    reported = fitter.fit(
        net,
        net,
        optimizer,
        memory,
        "target",
        FitSchedule(steps=300, batch_size=128, lr=1e-2),
        lambda t: sample_weights(t, "linear"),
        recorded_loss,
        "test",
    )
    after = _whole_memory_loss(game, net, obs, mask, target, weight)
    assert after < 0.1 * before, (before, after)
    assert reported == pytest.approx(sum(seen[-75:]) / 75, rel=1e-9)  # the mean of the last quarter of the steps
    assert fitter.nonfinite_loss_count == 0 and fitter.batch_seconds > 0
    assert not net.training  # left in eval mode
    assert optimizer.param_groups[0]["lr"] == 1e-2  # the schedule's rate, whatever the optimizer had


@pytest.mark.parametrize("aggregate", [True, False])
@pytest.mark.parametrize("scheme, expected", [("linear", 3.0), ("uniform", 2.0)])
def test_samples_weigh_by_their_iteration(scheme, expected, aggregate):
    # One observation with two contradicting targets: 0 from iteration 1 and 4 from iteration 3.
    # The weighted MSE is least at the weighted mean: (1 * 0 + 3 * 4) / 4 = 3 when linear, 2 when uniform.
    game = make_game("kuhn")
    fitter, codec = _fitter(game, seed=4)
    state = game.init(1, torch.Generator().manual_seed(0))
    obs, mask = game.observe(state, 0).repeat(2, 1), game.legal_mask(state).repeat(2, 1)
    target = torch.tensor([[0.0], [4.0]]).expand(2, game.num_actions)
    memory = _memory(game, codec, obs, mask, target, torch.tensor([1, 3]))
    if aggregate:
        table = fitter.aggregate_memory(memory, "target", lambda t: sample_weights(t, scheme))
        assert table["weight"].tolist() == [4.0 if scheme == "linear" else 2.0]  # one row, the summed weight
        assert torch.allclose(table["values"][table["mask"]], torch.tensor(expected))
    torch.manual_seed(0)
    net = DeepCFRMLP(game.feature_size, game.num_actions, 16, 1)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    schedule = FitSchedule(steps=400, batch_size=64, lr=1e-2, lr_schedule="cosine", aggregate=aggregate)
    fitter.fit(
        net, net, optimizer, memory, "target", schedule, lambda t: sample_weights(t, scheme), advantage_loss, "w"
    )
    with torch.no_grad():
        fitted = net(game.encode(obs[:1]))[mask[:1]]
    assert torch.allclose(fitted, torch.tensor(expected), atol=0.15), fitted


def test_aggregate_memory_merges_equal_observations_only():
    game = make_game("kuhn")
    fitter, codec = _fitter(game)
    obs, mask = _positions(game, 16, seed=5)
    values = torch.randn(obs.shape[0], game.num_actions, generator=torch.Generator().manual_seed(6)) * mask
    iteration = torch.randint(1, 4, (obs.shape[0],), generator=torch.Generator().manual_seed(7))
    memory = _memory(game, codec, obs, mask, values, iteration)
    table = fitter.aggregate_memory(memory, "target", lambda t: sample_weights(t, "linear"))
    distinct = torch.unique(obs, dim=0)
    assert table["weight"].shape[0] == distinct.shape[0] < obs.shape[0]
    assert float(table["weight"].sum()) == pytest.approx(float(iteration.sum()))
    assert float(table["probs"].sum()) == pytest.approx(1.0)
    for row in range(table["weight"].shape[0]):  # each row is the weighted mean of its observation's samples
        same = (game.encode(obs) == table["features"][row]).all(dim=1)
        w = iteration[same].double()
        mean = (w[:, None] * values[same].double()).sum(0) / w.sum()
        assert torch.allclose(table["values"][row].double(), mean, atol=1e-5)
        assert torch.equal(table["mask"][row], mask[same][0])


def _kuhn_zero_targets(seed: int):
    """(game, fitter, memory of Kuhn positions whose targets are 0, a small network)."""
    game = make_game("kuhn")
    fitter, codec = _fitter(game)
    obs, mask = _positions(game, 8, seed=seed)
    memory = _memory(game, codec, obs, mask, torch.zeros(obs.shape[0], game.num_actions), torch.ones(obs.shape[0]))
    return game, fitter, memory, DeepCFRMLP(game.feature_size, game.num_actions, 8, 1)


def test_non_finite_losses_are_skipped_and_counted():
    _, fitter, memory, net = _kuhn_zero_targets(seed=8)
    weights = [p.detach().clone() for p in net.parameters()]
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

    def broken(outputs, *rest):
        return advantage_loss(outputs, *rest) * float("nan")

    loss = fitter.fit(
        net,
        net,
        optimizer,
        memory,
        "target",
        FitSchedule(steps=7, batch_size=4, lr=0.1),
        lambda t: sample_weights(t, "linear"),
        broken,
        "nan",
    )
    assert math.isnan(loss) and fitter.nonfinite_loss_count == 7
    assert all(torch.equal(a, b) for a, b in zip(weights, net.parameters()))  # nothing was stepped


def test_cosine_schedule_ends_at_its_final_fraction():
    _, fitter, memory, net = _kuhn_zero_targets(seed=9)
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    schedule = FitSchedule(steps=10, batch_size=4, lr=0.2, lr_schedule="cosine", lr_final_fraction=0.05)
    fitter.fit(
        net, net, optimizer, memory, "target", schedule, lambda t: sample_weights(t, "linear"), advantage_loss, "c"
    )
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.2 * 0.05)


def test_drawn_samples_are_relabelled_by_the_games_symmetry():
    # Lost Cities' colours: a drawn sample keeps its values, moved with its legal actions.
    game = make_game("lost_cities", variant="mini")
    obs, mask = _positions(game, 1, seed=10)
    obs, mask = obs[:1].repeat(256, 1), mask[:1].repeat(256, 1)
    values = torch.arange(game.num_actions, dtype=torch.float32).repeat(256, 1) * mask
    plain, codec = _fitter(game, augment=False)
    relabelled, _ = _fitter(game, augment=True)
    memory = _memory(game, codec, obs, mask, values, torch.ones(256))
    features, drawn_mask, drawn_values, _ = plain.draw_batch(memory, 64, "target")
    assert torch.equal(drawn_mask, mask[:64]) and torch.equal(drawn_values, values[:64])
    features, drawn_mask, drawn_values, _ = relabelled.draw_batch(memory, 64, "target")
    assert len({tuple(m.tolist()) for m in drawn_mask}) > 1  # other colour orders were drawn
    for m, v in zip(drawn_mask, drawn_values):
        assert int(m.sum()) == int(mask[0].sum())
        assert sorted(v[m].tolist()) == sorted(values[0][mask[0]].tolist())  # the same values, moved
        assert float(v[~m].abs().sum()) == 0.0
    assert not torch.equal(features, game.encode(obs[:64]))
