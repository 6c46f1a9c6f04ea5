"""Property tests (hypothesis) of both Lost Cities engines, over random rules and seeds."""

import random

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepcfr.games.base import clone_state, sample_uniform_legal
from deepcfr.games.lost_cities import LostCitiesGame, LostCitiesReference, LostCitiesRules, make_rules

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def small_rules(draw):
    n_colors = draw(st.integers(1, 4))
    n_ranks = draw(st.integers(1, 7))
    n_wagers = draw(st.integers(0, 3))
    deck = n_colors * (n_ranks + n_wagers)
    if deck < 3:
        n_ranks += 3
        deck = n_colors * (n_ranks + n_wagers)
    return LostCitiesRules(
        n_colors=n_colors,
        n_ranks=n_ranks,
        n_wagers=n_wagers,
        min_rank=draw(st.integers(1, 4)),
        hand_size=draw(st.integers(1, (deck - 1) // 2)),
        expedition_cost=draw(st.integers(-25, 0)),
        bonus_threshold=draw(st.integers(1, 8)),
        bonus=draw(st.integers(0, 30)),
        ply_cap=draw(st.integers(2, 80)),
        utility=draw(st.sampled_from(["score_diff", "win_loss"])),
    )


def random_playout(rules, seed):
    """A reference game played with random legal actions, checking invariants after every move."""
    rng = random.Random(seed)
    g = LostCitiesReference.new(rules, seed)
    while True:
        check_reference_invariants(g)
        if g.is_terminal():
            return g
        g.apply(rng.choice(g.legal_actions()))


def check_reference_invariants(g):
    r = g.rules
    places = g.hands[0] + g.hands[1] + g.deck + [c for pile in g.piles for c in pile]
    places += [c for p in range(2) for e in g.expeditions[p] for c in e]
    assert sorted(places) == list(range(r.deck_size))  # every card in exactly one place
    for p in range(2):
        assert g.known[p] <= set(g.hands[p])
        for c, cards in enumerate(g.expeditions[p]):
            kinds = [r.card_kind(x) for x in cards]
            assert all(r.card_color(x) == c for x in cards)
            numbered = [k for k in kinds if k > 0]
            assert kinds == [0] * (len(kinds) - len(numbered)) + numbered  # wagers first
            assert all(a < b for a, b in zip(numbered, numbered[1:]))  # strictly increasing
    assert len(g.hands[g.player]) == r.hand_size - (g.phase == 1)  # one card out between the decisions
    assert len(g.hands[1 - g.player]) == r.hand_size
    assert g.is_terminal() == (not g.deck or g.num_decisions >= r.ply_cap)
    assert g.cut_off == (bool(g.deck) and g.num_decisions >= r.ply_cap)


@SETTINGS
@given(rules=small_rules(), seed=st.integers(0, 10_000))
def test_reference_invariants_hold_in_random_games(rules, seed):
    g = random_playout(rules, seed)
    assert g.num_decisions <= rules.ply_cap


@SETTINGS
@given(rules=small_rules(), seed=st.integers(0, 10_000))
def test_batched_engine_matches_reference_on_random_rules(rules, seed):
    game = LostCitiesGame(rules)
    generator = torch.Generator().manual_seed(seed)
    state = game.init(6, generator)
    refs = [LostCitiesReference.from_deal(rules, deal) for deal in game.deals(state).tolist()]
    while True:
        assert game.legal_mask(state).tolist() == [r.legal_mask() for r in refs]
        for p in (0, 1):
            assert game.observe(state, p).tolist() == [r.observe(p) for r in refs]
        assert game.scores(state).tolist() == [list(r.scores()) for r in refs]
        assert game.returns(state).tolist() == [list(r.returns()) for r in refs]
        assert game.current_player(state).tolist() == [-1 if r.is_terminal() else r.current_player() for r in refs]
        assert game.cut_off(state).tolist() == [r.cut_off for r in refs]
        terminal = game.is_terminal(state)
        # terminal iff the deck is empty or the ply cap is hit
        assert torch.equal(terminal, (game.deck_size(state) == 0) | (game.num_decisions(state) >= rules.ply_cap))
        assert terminal.tolist() == [r.is_terminal() for r in refs]
        if bool(terminal.all()):
            break
        actions = sample_uniform_legal(game.legal_mask(state), generator)
        for ref, a in zip(refs, actions.tolist()):
            if not ref.is_terminal():
                ref.apply(a)
        game.step(state, actions)


@SETTINGS
@given(variant=st.sampled_from(["classic", "mini"]), seed=st.integers(0, 2**31 - 1), steps=st.integers(0, 60))
def test_batched_cards_are_each_in_exactly_one_place(variant, seed, steps):
    game = LostCitiesGame.from_params(variant)
    r = game.rules
    generator = torch.Generator().manual_seed(seed)
    state = game.init(16, generator)
    for _ in range(steps):
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    o0, o1 = game.observe(state, 0)[:, : r.deck_size].long(), game.observe(state, 1)[:, : r.deck_size].long()
    # Numbered cards (wager codes are sorted per colour, so compare those by counts).
    numbered = torch.tensor([r.card_kind(c) > 0 for c in range(r.deck_size)])
    a, b = o0[:, numbered], o1[:, numbered]
    in_hand0 = a == 1
    in_hand1 = b == 1
    assert bool((~(in_hand0 & in_hand1)).all())
    assert torch.equal(a == 2, b == 3) and torch.equal(a == 3, b == 2)  # expeditions seen alike
    assert torch.equal(a >= 5, b >= 5) and torch.equal(torch.where(a >= 5, a, 0), torch.where(b >= 5, b, 0))
    assert bool(((a == 4) <= in_hand1).all()) and bool(((b == 4) <= in_hand0).all())  # known: really there
    unseen = (a == 0) & (b == 0)  # in the deck
    hands = (o0 == 1).sum(1) + (o1 == 1).sum(1)
    piles = (o0 >= 5).sum(1)
    expeditions = ((o0 == 2) | (o0 == 3)).sum(1)
    deck = game.deck_size(state)
    assert torch.equal(hands + piles + expeditions + deck, torch.full_like(deck, r.deck_size))
    assert bool((unseen.sum(1) <= deck).all())


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), steps=st.integers(1, 80))
def test_same_seed_same_states(seed, steps):
    game = LostCitiesGame()
    runs = []
    for _ in range(2):
        generator = torch.Generator().manual_seed(seed)
        state = game.init(8, generator)
        for _ in range(steps):
            game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
        runs.append(state)
    for name in runs[0].__dataclass_fields__:
        assert torch.equal(getattr(runs[0], name), getattr(runs[1], name)), name


@SETTINGS
@given(rules=small_rules(), seed=st.integers(0, 10_000), cut=st.integers(0, 40))
def test_observation_hides_the_opponents_unknown_cards_and_the_deck_order(rules, seed, cut):
    rng = random.Random(seed)
    g = LostCitiesReference.new(rules, seed)
    for _ in range(cut):
        if g.is_terminal():
            break
        g.apply(rng.choice(g.legal_actions()))
    me = rng.randrange(2)
    other = 1 - me
    twin = LostCitiesReference.from_deal(rules, list(range(rules.deck_size)))
    twin.__dict__.update({k: v for k, v in g.__dict__.items()})
    # Shuffle what ``me`` cannot see: the opponent's unknown cards and the deck, together.
    hidden = [c for c in g.hands[other] if c not in g.known[other]] + g.deck
    rng.shuffle(hidden)
    n_unknown = len(g.hands[other]) - len(g.known[other])
    twin.hands = [list(g.hands[0]), list(g.hands[1])]
    twin.hands[other] = sorted(g.known[other]) + hidden[:n_unknown]
    twin.deck = hidden[n_unknown:]
    assert twin.observe(me) == g.observe(me)
    # The batched engine sees the same: deals that differ only in player 1's hand and the deck.
    game = LostCitiesGame(rules)
    deal = list(range(rules.deck_size))
    random.Random(seed).shuffle(deal)
    h = rules.hand_size
    rest = deal[h:]
    random.Random(seed + 1).shuffle(rest)
    state = game.init_from_deal(torch.tensor([deal, deal[:h] + rest]))
    before = clone_state(state)
    obs = game.observe(state, 0)
    assert torch.equal(obs[0], obs[1])
    # ... and after player 0's card decision (the same legal actions in both rows).
    actions = game.legal_mask(state)[0].nonzero()[:, 0]
    action = int(actions[rng.randrange(len(actions))])
    game.step(state, torch.tensor([action, action]), check=True)
    obs = game.observe(state, 0)
    assert torch.equal(obs[0], obs[1]) and not torch.equal(obs, game.observe(before, 0))


def test_classic_variant_is_the_default():
    assert make_rules() == LostCitiesRules() and LostCitiesGame().rules == LostCitiesRules()
