"""The batched Lost Cities engine against the reference engine, and its own API contract."""

import dataclasses
import random

import pytest
import torch

from deepcfr.bench.engine import refill_finished
from deepcfr.games.base import (
    BatchedGame,
    IllegalActionError,
    clone_state,
    concat_states,
    index_state,
    sample_uniform_legal,
)
from deepcfr.games.lost_cities import LostCitiesGame, LostCitiesReference, make_rules
from deepcfr.games.registry import make_game


def tensor_fields(state):
    return [f.name for f in dataclasses.fields(state) if not f.metadata.get("static", False)]


def states_equal(a, b, rows=None):
    for name in tensor_fields(a):
        x, y = getattr(a, name), getattr(b, name)
        if rows is not None:
            x, y = x[rows], y[rows]
        if not torch.equal(x, y):
            return name
    return None


def reference_view(ref):
    """Everything the batched engine is compared on, from one reference game."""
    obs = [ref.observe(0), ref.observe(1)]
    expeditions = [ref.expedition_scores(0), ref.expedition_scores(1)]
    mover = -1 if ref.is_terminal() else ref.current_player()  # the batched convention: -1 once over
    return {
        "current player": mover,
        "terminal": ref.is_terminal(),
        "cut off": ref.cut_off,
        "decisions": ref.num_decisions,
        "legal mask": ref.legal_mask(),
        "observation of player 0": obs[0],
        "observation of player 1": obs[1],
        "observation of the mover": obs[max(mover, 0)],
        "expedition scores": expeditions,
        "scores": [sum(expeditions[0]), sum(expeditions[1])],
        "returns": list(ref.returns()) if ref.is_terminal() else [float("nan")] * 2,
        "deck size": len(ref.deck),
    }


def batched_view(game, state):
    return {
        "current player": game.current_player(state),
        "terminal": game.is_terminal(state),
        "cut off": game.cut_off(state),
        "decisions": game.num_decisions(state),
        "legal mask": game.legal_mask(state),
        "observation of player 0": game.observe(state, 0),
        "observation of player 1": game.observe(state, 1),
        "observation of the mover": game.observe(state, game.current_player(state).clamp(min=0)),
        "expedition scores": game.expedition_scores(state),
        "scores": game.scores(state),
        "returns": game.returns(state),
        "deck size": game.deck_size(state),
    }


def assert_same_as_reference(game, state, refs, views, where=""):
    """Every query of the batched engine equals the reference engine's, row by row (``views``:
    the reference rows, kept up to date by the caller)."""
    for name, batched in batched_view(game, state).items():
        expected = torch.as_tensor([v[name] for v in views], dtype=batched.dtype)
        if name == "returns":  # compared once a game is over (scores are compared throughout)
            batched = torch.where(game.is_terminal(state).unsqueeze(1), batched, expected)
            expected = torch.where(expected.isnan(), 0.0, expected)
            batched = torch.where(batched.isnan(), 0.0, batched)
        if not torch.equal(batched, expected):
            bad = (batched != expected).reshape(len(refs), -1).any(dim=1).nonzero()[0, 0].item()
            raise AssertionError(
                f"{where}: {name} differs in row {bad}: batched {batched[bad].tolist()} "
                f"reference {expected[bad].tolist()}\n{refs[bad]}"
            )


def play_both(game, n, seed):
    """Random playouts in both engines from the same deals, compared after every decision."""
    generator = torch.Generator().manual_seed(seed)
    state = game.init(n, generator)
    refs = [LostCitiesReference.from_deal(game.rules, deal) for deal in game.deals(state).tolist()]
    views = [reference_view(ref) for ref in refs]
    steps = 0
    while True:
        assert_same_as_reference(game, state, refs, views, where=f"seed {seed} step {steps}")
        if bool(game.is_terminal(state).all()):
            return state, refs
        actions = sample_uniform_legal(game.legal_mask(state), generator)
        for i, (ref, action) in enumerate(zip(refs, actions.tolist())):
            if not ref.is_terminal():
                ref.apply(action)  # raises if the batched mask allowed an illegal action
                views[i] = reference_view(ref)
        game.step(state, actions)
        steps += 1


@pytest.mark.parametrize(
    "variant, n, overrides",
    [
        ("classic", 256, {}),
        ("classic", 256, dict(ply_cap=61, utility="win_loss")),
        ("mini", 1000, {}),
        ("mini", 300, dict(ply_cap=7)),
        # The widest tables: 10 colours, 5 wager copies (base-3 hand entries up to 242), large values.
        ("classic", 32, dict(n_colors=10, n_ranks=4, n_wagers=5, min_rank=60, hand_size=10, ply_cap=600)),
    ],
)
def test_random_playouts_match_the_reference(variant, n, overrides):
    game = LostCitiesGame.from_params(variant, **overrides)
    state, refs = play_both(game, n, seed=hash((variant, n)) % 1000)
    assert bool(game.is_terminal(state).all())
    if "ply_cap" in overrides:
        assert int(game.cut_off(state).sum()) > 0
        assert bool((game.num_decisions(state) <= overrides["ply_cap"]).all())
    else:
        assert int(game.cut_off(state).sum()) == 0
        assert bool((game.deck_size(state) == 0).all())


def test_protocol_attributes_and_construction():
    game = make_game("lost_cities", variant="mini", ply_cap=99)
    assert isinstance(game, BatchedGame)
    rules = make_rules("mini", ply_cap=99)
    assert game.rules == rules and game.name == "lost_cities" and game.num_players == 2
    assert game.num_actions == rules.num_actions == 2 * 18 + 1 + 3
    assert game.obs_size == rules.deck_size + 5 and game.obs_dtype == torch.uint8
    assert game.max_game_length == 99
    assert game.config_dict() == rules.model_dump()
    assert LostCitiesGame.from_params("mini", ply_cap=99).config_dict() == game.config_dict()
    assert game.action_name(0) == "play red wager"
    assert game.action_name(game.num_actions - 1) == "draw pile blue"
    assert LostCitiesGame().num_actions == 106 and LostCitiesGame().obs_size == 65


def test_init_is_reproducible_and_deals_are_permutations():
    game = LostCitiesGame()
    a = game.init(64, torch.Generator().manual_seed(3))
    b = game.init(64, torch.Generator().manual_seed(3))
    c = game.init(64, torch.Generator().manual_seed(4))
    assert states_equal(a, b) is None
    assert not torch.equal(game.deals(a), game.deals(c))
    assert torch.equal(game.deals(a).sort(dim=1).values, torch.arange(60).expand(64, 60))
    assert len({tuple(d) for d in game.deals(a).tolist()}) == 64
    again = game.init_from_deal(game.deals(a))
    assert states_equal(a, again) is None


def test_init_from_deal_rejects_bad_deals():
    game = LostCitiesGame.from_params("mini")
    with pytest.raises(ValueError, match=r"shape \[n, 18\]"):
        game.init_from_deal(torch.arange(17).unsqueeze(0))
    with pytest.raises(ValueError, match="permutation"):
        game.init_from_deal(torch.zeros(2, 18, dtype=torch.long))
    with pytest.raises(ValueError, match="permutation"):
        game.init_from_deal(torch.arange(1, 19).unsqueeze(0))


def test_check_mode_raises_naming_row_and_action():
    game = LostCitiesGame()
    state = game.init(8, torch.Generator().manual_seed(0))
    mask = game.legal_mask(state)
    actions = mask.float().argmax(dim=1)
    bad = game.rules.draw_deck_action  # drawing before the card decision
    actions[5] = bad
    before = clone_state(state)
    message = r"row 5: illegal action 100 \(draw deck\) for player 0 in the play/discard"
    with pytest.raises(IllegalActionError, match=message):
        game.step(state, actions, check=True)
    assert states_equal(state, before) is None  # nothing applied
    actions[5] = 500
    with pytest.raises(IllegalActionError, match="row 5: illegal action 500 .out of range"):
        game.step(state, actions, check=True)
    with pytest.raises(IllegalActionError, match="shape"):
        game.step(state, actions[:3], check=True)
    actions[5] = mask[5].float().argmax()
    game.step(state, actions, check=True)
    assert bool((state.phase == 1).all())


def test_terminal_rows_are_left_unchanged():
    game = LostCitiesGame.from_params("mini", ply_cap=12)
    generator = torch.Generator().manual_seed(1)
    state = game.init(50, generator)
    while not bool(game.is_terminal(state).all()):
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    assert not bool(game.legal_mask(state).any())
    before = clone_state(state)
    game.step(state, torch.randint(-3, 500, (50,), generator=generator))  # any action, even garbage
    game.step(state, torch.zeros(50, dtype=torch.long), check=True)
    assert states_equal(state, before) is None


def test_mixed_batches_leave_finished_rows_alone():
    game = LostCitiesGame.from_params("mini")
    generator = torch.Generator().manual_seed(2)
    state = game.init(200, generator)
    seen_mixed = False
    while not bool(game.is_terminal(state).all()):
        done = game.is_terminal(state)
        before = clone_state(state)
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
        if done.any() and not done.all():
            seen_mixed = True
            assert states_equal(state, before, rows=done) is None
    assert seen_mixed


def test_state_helpers_index_clone_concat():
    game = LostCitiesGame()
    generator = torch.Generator().manual_seed(5)
    state = game.init(16, generator)
    for _ in range(30):
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    rows = torch.tensor([3, 3, 0, 15])
    part = index_state(state, rows)
    joined = concat_states([index_state(state, torch.arange(8)), index_state(state, torch.arange(8, 16))])
    assert states_equal(joined, state) is None
    copy = clone_state(state)
    actions = sample_uniform_legal(game.legal_mask(state), generator)
    game.step(state, actions)
    assert states_equal(copy, state) is not None  # the clone did not move
    game.step(part, actions[rows])
    assert states_equal(part, index_state(state, rows)) is None
    assert torch.equal(game.observe(part, 1), game.observe(state, 1)[rows])


def test_observe_with_a_player_tensor_and_obs_player():
    game = LostCitiesGame()
    generator = torch.Generator().manual_seed(6)
    state = game.init(32, generator)
    for _ in range(9):
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    who = torch.randint(0, 2, (32,), generator=generator)
    obs = game.observe(state, who)
    expected = torch.where(who.unsqueeze(1) == 1, game.observe(state, 1), game.observe(state, 0))
    assert torch.equal(obs, expected)
    assert torch.equal(game.obs_player(obs), who)
    assert obs.dtype == torch.uint8 and obs.shape == (32, game.obs_size)
    with pytest.raises(ValueError, match="player must be 0 or 1"):
        game.observe(state, 2)


def test_encode_is_a_batched_function_of_obs():
    for variant in ("classic", "mini"):
        game = LostCitiesGame.from_params(variant)
        generator = torch.Generator().manual_seed(7)
        state = game.init(64, generator)
        obs = []
        for _ in range(40):
            obs.append(game.observe(state, game.current_player(state).clamp(min=0)))
            game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
        obs = torch.cat(obs)
        features = game.encode(obs)
        assert features.shape == (obs.shape[0], game.feature_size) and features.dtype == torch.float32
        assert bool(torch.isfinite(features).all()) and float(features.abs().max()) <= 10
        assert torch.equal(game.encode(obs[5:9]), features[5:9])  # row-wise
        distinct_obs = len({tuple(o) for o in obs.tolist()})
        distinct_features = len({tuple(f) for f in features.tolist()})
        assert distinct_features == distinct_obs  # different information, different features
    with pytest.raises(ValueError, match="obs must have shape"):
        game.encode(obs[:, :10])


def plain_features(rules, row):
    """The documented feature layout (encoding.py), one observation row, in plain Python."""
    D, C, P, W, R1 = rules.deck_size, rules.n_colors, rules.cards_per_color, rules.n_wagers, rules.n_ranks + 1
    codes, (deck, phase, discarded, seat, to_move) = row[:D], row[D:]
    kind = [rules.card_kind(c) for c in range(D)]
    color = [rules.card_color(c) for c in range(D)]
    height = [sum(1 for c in range(D) if color[c] == col and codes[c] >= 5) for col in range(C)]
    exp = {s: [[c for c in range(D) if color[c] == col and codes[c] == 2 + s] for col in range(C)] for s in (0, 1)}
    top = {s: [max([kind[c] for c in exp[s][col]], default=0) for col in range(C)] for s in (0, 1)}
    scale = max(1, abs(rules.expedition_cost)) * (1 + W)
    f = []
    for code in (1, 2, 3, 4):
        f += [float(x == code) for x in codes]
    f += [float(x >= 5) for x in codes]
    f += [float(x >= 5 and x - 5 == height[color[c]] - 1) for c, x in enumerate(codes)]
    f += [max(0, x - 5) / P for x in codes]
    for s in (0, 1):
        f += [float(kind[c] > top[s][color[c]] or (kind[c] == 0 and top[s][color[c]] == 0)) for c in range(D)]
    side = {}
    for s in (0, 1):
        for col in range(C):
            cards = exp[s][col]
            wagers = sum(1 for c in cards if kind[c] == 0)
            total = sum(rules.kind_value(kind[c]) for c in cards)
            bonus = rules.bonus * (len(cards) >= rules.bonus_threshold)
            score = (total + rules.expedition_cost) * (1 + wagers) + bonus if cards else 0
            color_total = sum(rules.kind_value(rules.card_kind(j)) for j in range(P))
            side[s, col] = [
                float(bool(cards)),
                len(cards) / P,
                wagers / max(W, 1),
                total / color_total,
                top[s][col] / rules.n_ranks,
                score / scale,
            ]
    for k in range(6):
        for s in (0, 1):
            f += [side[s, col][k] for col in range(C)]
    f += [height[col] / P for col in range(C)]
    for col in range(C):
        tops = [kind[c] for c in range(D) if color[c] == col and codes[c] == 4 + height[col] and height[col] > 0]
        f += [float(bool(tops) and tops[0] == k) for k in range(R1)]
    f += [sum(1 for c in range(D) if color[c] == col and codes[c] == 0) / P for col in range(C)]
    totals = [sum(side[s, col][5] for col in range(C)) / C for s in (0, 1)]
    f += totals + [totals[0] - totals[1]]
    f += [deck / max(1, D - 2 * rules.hand_size)] + [float(deck <= t) for t in (1, 2, 4, 8)]
    f += [float(phase == 0), float(phase == 1)] + [float(discarded == c) for c in range(C + 1)]
    f += [float(seat), float(seat == to_move)]
    color_total = sum(rules.kind_value(rules.card_kind(j)) for j in range(P))
    playable = [kind[c] > top[0][color[c]] or (kind[c] == 0 and top[0][color[c]] == 0) for c in range(D)]
    outlook = [[] for _ in range(7)]
    for col in range(C):
        hand = [c for c in range(D) if color[c] == col and codes[c] == 1]
        fits = [c for c in hand if playable[c]]
        unseen = [c for c in range(D) if color[c] == col and codes[c] == 0 and playable[c]]
        mine = exp[0][col]
        n_after = len(mine) + len(fits)
        wagers_after = sum(1 for c in mine + fits if kind[c] == 0)
        total_after = sum(rules.kind_value(kind[c]) for c in mine + fits)
        projected = (
            (
                (total_after + rules.expedition_cost) * (1 + wagers_after)
                + rules.bonus * (n_after >= rules.bonus_threshold)
            )
            if n_after
            else 0
        )
        values = [
            len(hand) / P,
            sum(1 for c in hand if kind[c] == 0) / max(W, 1),
            sum(rules.kind_value(kind[c]) for c in hand) / color_total,
            len(fits) / P,
            sum(rules.kind_value(kind[c]) for c in fits) / color_total,
            sum(rules.kind_value(kind[c]) for c in unseen) / color_total,
            projected / scale,
        ]
        for k, v in enumerate(values):
            outlook[k].append(v)
    for group in outlook:
        f += group
    return f


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_encode_matches_a_plain_reading_of_the_observation(variant):
    game = LostCitiesGame.from_params(variant)
    generator = torch.Generator().manual_seed(11)
    state = game.init(24, generator)
    rows = []
    for step in range(120):
        if step % 10 == 3:
            rows.append(game.observe(state, torch.randint(0, 2, (24,), generator=generator)))
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    obs = torch.cat(rows)
    features = game.encode(obs)
    expected = torch.tensor([plain_features(game.rules, row) for row in obs.tolist()])
    assert expected.shape == features.shape
    assert torch.allclose(features, expected, atol=1e-6), (features - expected).abs().max(dim=0)


def test_scores_of_a_constructed_state():
    # The worked examples of the rules through the batched scoring: player 0's expeditions
    # red W 3 5 9, green W W 4 5 6 7 8 10, blue 2 4 6 7 8 9 10, yellow W (white empty).
    game = LostCitiesGame(make_rules("classic", utility="win_loss"))
    state = game.init(1, torch.Generator().manual_seed(0))

    def packed(cards, wagers, total):
        return cards | wagers << 8 | total << 16

    game.expedition(state)[0, 0] = torch.tensor(
        [packed(4, 1, 17), packed(8, 2, 40), packed(7, 0, 46), 0, packed(1, 1, 0)]
    )
    assert game.expedition_scores(state)[0, 0].tolist() == [-6, 80, 26, 0, -40]
    assert game.scores(state).tolist() == [[60, 0]]
    assert game.returns(state).tolist() == [[1.0, -1.0]]


def test_refill_keeps_a_batch_of_live_games():
    game = LostCitiesGame.from_params("mini")
    generator = torch.Generator().manual_seed(8)
    state = game.init(64, generator)
    for _ in range(40):
        game.step(state, sample_uniform_legal(game.legal_mask(state), generator))
    finished = int(game.is_terminal(state).sum())
    assert finished > 0
    assert refill_finished(game, state, generator) == finished
    assert not bool(game.is_terminal(state).any())


def test_bench_counts_decisions_from_the_turn_word_as_from_live_rows():
    from deepcfr.bench.engine import _BatchedRun

    game = LostCitiesGame.from_params("mini")
    results = []
    for counts_decisions in (True, False):
        run = _BatchedRun(game, 128, seed=3)
        run.counts_decisions = counts_decisions
        for _ in range(30):
            run.run(0)  # one refill period each
        result = run.result()
        results.append((int(run.decisions), result["finished_games"], result["mean_game_length"]))
    assert results[0] == results[1]
    assert results[0][1] > 0


def test_sample_uniform_legal_picks_only_legal_actions_uniformly():
    mask = torch.zeros(3000, 7, dtype=torch.bool)
    mask[:, [1, 4, 6]] = True
    picks = sample_uniform_legal(mask, torch.Generator().manual_seed(0))
    counts = torch.bincount(picks, minlength=7)
    assert counts[[0, 2, 3, 5]].sum() == 0
    assert all(850 < int(c) < 1150 for c in counts[[1, 4, 6]])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    game = LostCitiesGame()
    generator = torch.Generator().manual_seed(9)
    cpu = game.init(128, generator)
    gpu = game.init_from_deal(game.deals(cpu), device="cuda")
    for _ in range(300):
        mask = game.legal_mask(cpu)
        assert torch.equal(mask, game.legal_mask(gpu).cpu())
        assert torch.equal(game.observe(cpu, cpu.player), game.observe(gpu, gpu.player).cpu())
        actions = sample_uniform_legal(mask, generator)
        game.step(cpu, actions)
        game.step(gpu, actions.cuda())
    assert torch.equal(game.returns(cpu), game.returns(gpu).cpu())


@pytest.mark.parametrize("variant", ["classic", "mini"])
def test_useless_pile_draws_match_the_reference_engine(variant):
    """move_diagnostics against the reference engine's own rule: a pile draw is useless when the
    drawn card cannot go onto an expedition the drawer has started."""
    rules = make_rules(variant)
    game = LostCitiesGame(rules)
    rng = random.Random(4)
    checked = {True: 0, False: 0}
    for seed in range(12):
        ref = LostCitiesReference.new(rules, seed=seed)
        while not ref.is_terminal():
            player, legal = ref.current_player(), ref.legal_actions()
            obs = torch.tensor([ref.observe(player)], dtype=torch.uint8)
            for a in legal:
                move = rules.action(a)
                got = bool(game.move_diagnostics(obs, torch.tensor([a]))["useless_pile_draws"][0])
                if move.kind != "draw_pile":
                    assert not got
                    continue
                card = ref.piles[move.colour][-1]
                started = bool(ref.expeditions[player][move.colour])
                kind_index = move.colour * (rules.n_ranks + 1) + rules.card_kind(card)
                fits = started and ref._why_not_playable(player, kind_index) is None
                assert got == (not fits), (seed, a, ref)
                checked[got] += 1
            ref.apply(rng.choice(legal))
    assert checked[True] > 20 and checked[False] > 5  # both kinds of draw were seen
