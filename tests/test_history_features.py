"""What the public history tells of the opponent's hand (games/lost_cities/history_features.py):
the batched features agree with a plain per-game reading of the history, follow a colour
relabelling, and depend only on the opponent's moves."""

import pytest
import torch

from deepcfr.evaluate.arena import ActionHistory
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.games.lost_cities.history_features import RECENCY, TURN_SCALE, history_feature_size
from deepcfr.games.bots import make_bot
from deepcfr.games.base import sample_from_probs


@pytest.fixture(scope="module", params=["classic", "mini"])
def game(request):
    return LostCitiesGame.from_params(request.param)


def played(game, n, seed, stop_every=7):
    """(observations of the mover, histories before them) at every ``stop_every``-th decision of
    ``n`` games of random play that often draws from the piles."""
    gen = torch.Generator().manual_seed(seed)
    state = game.init(n, gen)
    history = ActionHistory(game, n, torch.device("cpu"))
    bot = make_bot(game, "heuristic_balanced")
    K2 = 2 * game.rules.num_kinds
    views, pasts = [], []
    for step in range(game.rules.ply_cap):
        live = ~game.is_terminal(state)
        if not bool(live.any()):
            break
        mask = game.legal_mask(state)
        obs = game.observe(state, game.current_player(state).clamp(min=0))
        if step % stop_every == 3:
            rows = live.nonzero().squeeze(1)
            views.append(obs[rows])
            pasts.append(history.actions[rows].clone())
        if step % 3 == 0:
            actions = bot.act(obs, mask, gen)
        else:
            weights = mask.float()
            weights[:, K2 + 1:] *= 4.0
            actions = sample_from_probs(weights, gen)
        history.record(actions, live)
        state = game.step(state, actions)
    return torch.cat(views), torch.cat(pasts)


def reference(game, obs_row: torch.Tensor, past: list[int]) -> torch.Tensor:
    """The features read from one game's history move by move."""
    r = game.rules
    K, C, R1, deck = r.num_kinds, r.n_colors, r.n_ranks + 1, r.draw_deck_action
    observer = int(game.obs_player(obs_row[None])[0])
    events, seat, turns = [], 0, 0
    for a in past:
        events.append((seat, turns, a))
        if a >= deck:
            seat, turns = 1 - seat, turns + 1
    out = torch.zeros(history_feature_size(r))
    discards, recent_discards, recent_plays = out[:K], out[K:2 * K], out[2 * K:3 * K]
    pile_draws, last_play, first_play, last_discard = (out[3 * K + i * C:3 * K + (i + 1) * C] for i in range(4))
    draws = from_piles = 0
    for s, t, a in events:
        if s == observer:
            continue
        w = RECENCY ** (max(turns - t - 1, 0) // 2)  # in the opponent's turns since
        if a < K:
            recent_plays[a] += w
            last_play[a // R1] = max(last_play[a // R1], w)
            first_play[a // R1] = w if first_play[a // R1] == 0 else min(first_play[a // R1], w)
        elif a < 2 * K:
            discards[a - K] += 1
            recent_discards[a - K] += w
            last_discard[(a - K) // R1] = max(last_discard[(a - K) // R1], w)
        else:
            draws += 1
            if a > deck:
                from_piles += 1
                pile_draws[a - deck - 1] += w
    out[-2] = from_piles / max(draws, 1)
    out[-1] = (turns // 2) / TURN_SCALE
    return out


def test_the_batched_features_agree_with_a_plain_reading_of_the_history(game):
    obs, history = played(game, 12, seed=1)
    got = game.history_features(obs, history)
    assert got.shape == (obs.shape[0], game.history_feature_size)
    for i in range(obs.shape[0]):
        past = [int(a) for a in history[i] if a >= 0]
        torch.testing.assert_close(got[i], reference(game, obs[i], past), msg=f"row {i}")
    assert float(got[:, :game.rules.num_kinds].sum()) > 0  # the games do show discards


def test_a_colour_relabelling_of_the_position_relabels_the_features(game):
    obs, history = played(game, 8, seed=2)
    symmetry = game.symmetry
    relabel = symmetry.sample(obs.shape[0], torch.Generator().manual_seed(3))
    moved = game.history_features(symmetry.obs(obs, relabel),
                                  torch.where(history >= 0, symmetry.actions(history.clamp(min=0), relabel), -1))
    base = game.history_features(obs, history)
    r = game.rules
    K, C = r.num_kinds, r.n_colors
    kinds = symmetry.kinds(torch.arange(K).expand(obs.shape[0], K).reshape(-1),
                           relabel.repeat_interleave(K, dim=0)).view(-1, K)
    for g in range(3):  # per kind
        expect = torch.zeros(obs.shape[0], K).scatter_(1, kinds, base[:, g * K:(g + 1) * K])
        torch.testing.assert_close(moved[:, g * K:(g + 1) * K], expect)
    for g in range(4):  # per colour
        at = 3 * K + g * C
        expect = torch.zeros(obs.shape[0], C).scatter_(1, relabel, base[:, at:at + C])
        torch.testing.assert_close(moved[:, at:at + C], expect)
    torch.testing.assert_close(moved[:, -2:], base[:, -2:])


def test_only_the_opponents_moves_count(game):
    """The observer's own moves change nothing (they are in its observation already): the
    features of a history where only the observer's actions differ are the same."""
    obs, history = played(game, 6, seed=4)
    r = game.rules
    deck = r.draw_deck_action
    live = history >= 0
    ends = live & (history >= deck)
    seat = (ends.long().cumsum(1) - ends.long()) % 2
    own = live & (seat == game.obs_player(obs)[:, None]) & (history < deck)
    # swap the observer's plays and discards of a kind for the other (same turn structure)
    swapped = torch.where(own, (history + r.num_kinds) % (2 * r.num_kinds), history)
    torch.testing.assert_close(game.history_features(obs, swapped), game.history_features(obs, history))


def test_a_history_of_the_wrong_shape_is_refused(game):
    obs, history = played(game, 2, seed=5)
    with pytest.raises(ValueError, match="history must have shape"):
        game.history_features(obs, history[:1])
