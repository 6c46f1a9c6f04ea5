"""Host syncs of the lockstep traversals: counted on CPU by SyncCounter (the same code paths
as on a GPU), and on CUDA by torch's sync debug mode."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.cfr import sampled as traversal_module
from deepcfr.cfr.networks import DeepCFRMLP
from deepcfr.cfr.policies import RegretMatchingPolicy, StrategyNetPolicy
from deepcfr.cfr.traversal import CriticSampling, OutcomeSampling, traverse
from deepcfr.games.registry import make_game
from deepcfr.host_syncs import SyncCounter, cuda_sync_warnings, to_host

CASES = {
    "outcome": OutcomeSampling(epsilon=0.6),
    "outcome_mean": OutcomeSampling(epsilon=0.3, unsampled_target="mean", tail_correction=False),
    "critic": CriticSampling(epsilon=0.1),
}


class StepCounting:
    """A game whose engine steps are counted (the lockstep steps of a traversal)."""

    def __init__(self, game):
        self._game = game
        self.steps = 0

    def step(self, state, actions, check=False):
        self.steps += 1
        return self._game.step(state, actions, check)

    def __getattr__(self, name):
        return getattr(self._game, name)


def lost_cities_policies(device="cpu"):
    game = make_game("lost_cities")
    torch.manual_seed(0)
    nets = [DeepCFRMLP(game.feature_size, game.num_actions, hidden_size=16, num_layers=1).to(device) for _ in range(2)]
    return game, RegretMatchingPolicy(nets[0], game.encode), StrategyNetPolicy(nets[1], game.encode)


def test_sync_counter_counts_scalar_reads_data_dependent_ops_and_to_host():
    x = torch.arange(10)
    with SyncCounter() as counter:
        int(x.sum())
        torch.nonzero(x > 4)
        x[x > 4]
        torch.unique(x)
        to_host(torch.stack([x.sum(), x.max()]))
        torch.nonzero_static(x > 4, size=5)  # size given: no sync
        x + 1
    assert counter.by_op == {
        "scalar read": 1,
        "nonzero.default": 1,
        "boolean index": 1,
        "_unique2.default": 1,
        "to_host": 1,
    }
    assert counter.count == 5


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), max_size=70))
def test_where_is_nonzero_with_the_count_known(values):
    mask = torch.tensor(values, dtype=torch.bool)
    expected = torch.nonzero(mask).squeeze(1)
    assert torch.equal(traversal_module._where(mask, int(mask.sum())), expected)


@pytest.mark.parametrize("name", list(CASES))
def test_one_host_sync_per_lockstep_step(name):
    """Before: 3-4 syncs per step (live count, two nonzero, cut-off counts; outcome sampling two
    more per traverser record). Now one per step (the live and traverser counts, read together)
    plus at most two at the end."""
    game, trav, opp = lost_cities_policies()
    counted = StepCounting(game)
    with SyncCounter() as counter:
        result = traverse(CASES[name], counted, 0, 200, trav, opp, 2, torch.Generator().manual_seed(3))
    assert result.stats.advantage_samples > 0 and counted.steps > 100
    assert counter.count <= counted.steps + 3, counter.by_op


def test_samples_do_not_depend_on_the_index_kernel(monkeypatch):
    """The sync-free ``nonzero_static`` path gives exactly the samples of plain ``nonzero``."""
    game, trav, opp = lost_cities_policies()
    results = []
    for static in (True, False):
        monkeypatch.setattr(traversal_module, "_NONZERO_STATIC", static)
        results.append(
            traverse(CriticSampling(epsilon=0.2), game, 1, 150, trav, opp, 2, torch.Generator().manual_seed(5))
        )
    for part in ("advantage", "strategy"):
        for key, value in getattr(results[0], part).items():
            assert torch.equal(value, getattr(results[1], part)[key]), (part, key)
    assert results[0].stats == results[1].stats


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", list(CASES))
def test_cuda_host_syncs_per_lockstep_step(name):
    """What torch's sync debug mode sees on CUDA: about one sync per lockstep step."""
    game, trav, opp = lost_cities_policies("cuda")
    counted = StepCounting(game)
    generator = torch.Generator(device="cuda").manual_seed(3)
    traverse(CASES[name], counted, 0, 64, trav, opp, 2, generator, device="cuda")  # warm-up
    counted.steps = 0
    with cuda_sync_warnings() as syncs:
        traverse(CASES[name], counted, 0, 512, trav, opp, 2, generator, device="cuda")
    assert counted.steps > 100
    assert len(syncs) <= 1.2 * counted.steps + 10, syncs[:5]
