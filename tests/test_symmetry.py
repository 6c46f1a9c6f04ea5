"""Colour relabelling of Lost Cities (games/lost_cities/symmetry.py) and memory.augment."""

import pytest
import torch

from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.train.config import ConfigError, load_config


def relabel_deals(game, deals, colour_of):
    """Card id c * P + j of each deal -> colour_of[c] * P + j."""
    P = game.rules.cards_per_color
    colour, within = deals // P, deals % P
    return colour_of.gather(1, colour) * P + within


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_relabelled_game_is_the_relabelled_play(variant):
    """Play random games and, side by side, the same games with colours permuted (deal and
    actions): every observation, legal mask and score of the second is the relabelling of the
    first's."""
    game = LostCitiesGame.from_params(variant)
    symmetry = game.symmetry
    generator = torch.Generator().manual_seed(5)
    n = 48
    deals = torch.rand(n, game.rules.deck_size, generator=generator).argsort(dim=1)
    colour_of = symmetry.sample(n, generator)
    assert torch.equal(colour_of.sort(dim=1).values, torch.arange(game.rules.n_colors).expand(n, -1))
    state = game.init_from_deal(deals)
    twin = game.init_from_deal(relabel_deals(game, deals, colour_of))
    columns = symmetry.action_columns(colour_of)
    steps = 0
    while not bool(game.is_terminal(state).all()):
        player = game.current_player(state).clamp(min=0)
        assert torch.equal(game.current_player(twin).clamp(min=0), player)
        for seat in (player, 1 - player):
            assert torch.equal(game.observe(twin, seat), symmetry.obs(game.observe(state, seat), colour_of))
        mask = game.legal_mask(state)
        assert torch.equal(game.legal_mask(twin), mask.gather(1, columns))
        actions = torch.multinomial(
            mask.float() + 1e-12 * (~mask.any(1, keepdim=True)), 1, generator=generator
        ).squeeze(1)
        game.step(state, actions)
        game.step(twin, symmetry.actions(actions, colour_of), check=True)
        steps += 1
    assert steps > 20
    assert torch.equal(game.scores(twin), game.scores(state))


def test_action_columns_and_actions_are_inverse_views():
    game = LostCitiesGame.from_params("classic")
    symmetry = game.symmetry
    n, A = 16, game.num_actions
    colour_of = symmetry.sample(n, torch.Generator().manual_seed(1))
    values = torch.randn(n, A)
    relabelled = values.gather(1, symmetry.action_columns(colour_of))
    actions = torch.randint(0, A, (n,))
    moved = symmetry.actions(actions, colour_of)
    rows = torch.arange(n)
    assert torch.equal(relabelled[rows, moved], values[rows, actions])
    assert torch.equal(
        symmetry.actions(torch.full((n,), 2 * game.rules.num_kinds), colour_of),
        torch.full((n,), 2 * game.rules.num_kinds),
    )  # drawing from the deck has no colour
    identity = torch.arange(game.rules.n_colors).expand(n, -1)
    assert torch.equal(symmetry.action_columns(identity), torch.arange(A).expand(n, -1))


def test_relabelling_is_uniform_over_permutations():
    game = LostCitiesGame.from_params("mini")  # 3 colours: 6 permutations
    colour_of = game.symmetry.sample(6000, torch.Generator().manual_seed(2))
    _, counts = torch.unique(colour_of, dim=0, return_counts=True)
    assert counts.numel() == 6 and int(counts.min()) > 850


def test_augment_is_rejected_where_it_cannot_apply():
    with pytest.raises(ConfigError, match="memory.augment: leduc has no symmetry"):
        load_config(None, ["game.name=leduc", "memory.augment=false", "memory.augment=true"])
    with pytest.raises(ConfigError, match="memory.augment does not combine"):
        load_config(None, ["memory.augment=true", "advantage.aggregate=true"])


def test_augmented_batches_are_relabelled_samples():
    """With memory.augment every drawn advantage row is some colour relabelling of a stored
    sample: its features, mask and targets match that sample relabelled."""
    from deepcfr.train.trainer import Trainer

    config = load_config(
        None,
        [
            "game.variant=mini",
            "traversal.algorithm=outcome",
            "traversal.traversals_per_player=64",
            "traversal.chunk_size=64",
            "run.iterations=1",
            "run.progress=false",
            "eval.every=0",
            "memory.augment=true",
            "advantage.train_steps=1",
            "strategy.train_steps=1",
            "checkpoint.every=0",
            "strategy.final_train_steps=0",
        ],
    )
    trainer = Trainer(config)
    trainer.run_iteration()
    memory = trainer.advantage_memories[0]
    features, mask, values, _ = trainer.fitter.draw_batch(memory, 256, "target")
    game = trainer.game
    stored_obs = memory.data("obs")[: len(memory)]
    stored_mask = trainer.codec.unpack_mask(memory.data("mask")[: len(memory)])
    stored_values = trainer.codec.unpack_values(memory.data("target")[: len(memory)], stored_mask)
    from itertools import permutations

    perms = torch.tensor(list(permutations(range(game.rules.n_colors))))
    identity = torch.arange(game.rules.n_colors)
    relabelled_anything = False
    for i in range(0, 256, 16):
        match = None
        for perm in perms:
            colour_of = perm.expand(stored_obs.shape[0], -1)
            columns = game.symmetry.action_columns(colour_of[:1])[0]
            hits = (game.encode(game.symmetry.obs(stored_obs, colour_of)) == features[i]).all(dim=1).nonzero()
            for j in hits.squeeze(1).tolist():
                if torch.equal(stored_mask[j][columns], mask[i]) and torch.allclose(
                    stored_values[j][columns], values[i]
                ):
                    match = perm
                    break
            if match is not None:
                break
        assert match is not None, f"drawn row {i} is no relabelled stored sample"
        relabelled_anything |= not torch.equal(match, identity)
    assert relabelled_anything
