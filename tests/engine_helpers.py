"""Checks shared by the engine tests of the small games (Kuhn, Leduc, Liar's Dice): a batched
engine stepped alongside one reference engine per row."""

from __future__ import annotations

import torch


def assert_same(game, state, refs) -> None:
    """Every row of the batched ``state`` says what its reference engine says."""
    assert game.current_player(state).tolist() == [r.current_player() for r in refs]
    assert game.legal_mask(state).tolist() == [r.legal_mask() for r in refs]
    assert game.is_terminal(state).tolist() == [r.is_terminal() for r in refs]
    assert game.returns(state).tolist() == [r.returns() for r in refs]
    for p in (0, 1):
        assert game.observe(state, p).tolist() == [r.observe(p) for r in refs]


def play_alongside_references(game, state, refs, choose, generator) -> torch.Tensor:
    """Play the batched games and their reference engines to the end with the actions of
    ``choose(game, state, generator)``, checking that they agree before every step and at the
    end; returns the number of decisions of each game ``[n]``."""
    lengths = torch.zeros(len(refs), dtype=torch.long)
    for _ in range(game.max_game_length + 1):
        assert_same(game, state, refs)
        if bool(game.is_terminal(state).all()):
            break
        lengths += ~game.is_terminal(state)
        actions = choose(game, state, generator)
        game.step(state, actions, check=True)
        for ref, a in zip(refs, actions.tolist()):
            if not ref.is_terminal():
                ref.apply(a)
    assert bool(game.is_terminal(state).all())
    assert_same(game, state, refs)
    return lengths


def assert_cuda_engine_matches_cpu(game, choose, deals: int = 512) -> None:
    """The same deals played on the CPU and on CUDA with the actions of ``choose(game, state,
    generator)`` give the same observations, masks, features and returns at every step; and
    ``init`` deals on the device."""
    dealt = game.deals_of(game.init(deals, torch.Generator().manual_seed(0)))
    cpu, gpu = game.init_from_deal(dealt), game.init_from_deal(dealt.cuda())
    generator = torch.Generator().manual_seed(1)
    while not bool(game.is_terminal(cpu).all()):
        actions = choose(game, cpu, generator)
        game.step(cpu, actions, check=True)
        game.step(gpu, actions.cuda(), check=True)
        assert torch.equal(game.observe(gpu, 1).cpu(), game.observe(cpu, 1))
        assert torch.equal(game.legal_mask(gpu).cpu(), game.legal_mask(cpu))
        assert torch.equal(game.encode(game.observe(gpu, 0)).cpu(), game.encode(game.observe(cpu, 0)))
    assert torch.equal(game.returns(gpu).cpu(), game.returns(cpu))
    on_device = game.deals_of(game.init(64, torch.Generator(device="cuda").manual_seed(0), device="cuda"))
    assert on_device.is_cuda
