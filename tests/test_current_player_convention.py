"""The batched API convention shared by every game: ``current_player`` is -1 exactly on finished games."""

import pytest
import torch

from deepcfr.games.benchmark import sample_uniform_legal
from deepcfr.games.registry import make_game


@pytest.mark.parametrize("name, params", [("kuhn", {}), ("leduc", {}), ("lost_cities", {"variant": "mini"})])
def test_current_player_is_minus_one_exactly_on_terminal_rows(name, params):
    game = make_game(name, **params)
    generator = torch.Generator().manual_seed(3)
    state = game.init(64, generator)
    seen_mixed = False
    for _ in range(game.max_game_length + 1):
        terminal = game.is_terminal(state)
        player = game.current_player(state)
        assert torch.equal(player == -1, terminal)
        assert bool(((player == 0) | (player == 1))[~terminal].all())
        seen_mixed |= bool(terminal.any()) and not bool(terminal.all())
        if bool(terminal.all()):
            break
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    assert bool(game.is_terminal(state).all()) and seen_mixed
