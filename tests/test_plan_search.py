"""The search that plans past one decision (search/plan.py, issue 66): the batched tree equals a
plain recursive one in the oracle's worlds and in worlds drawn from a belief, with the opponent
played by the rollout policy or by the player it faces; depth 2 finds a two-turn combination that
depth 1 cannot see, knowing the opponent's hand or not; the belief's worlds agree with what the
decider saw; the planner never plays an illegal move, answers within a time limit with fewer
worlds, and the oracle's worlds and the arena's true state reach it."""

from __future__ import annotations

import pytest
import torch

from deepcfr.evaluate.arena import play_match
from deepcfr.games.base import index_state, sample_from_probs
from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.players import BotPlayer, load_player
from deepcfr.search import PlanSearch, RolloutSearch, SearchConfig
from search_helpers import tiny_checkpoint


@pytest.fixture(scope="module")
def mini_checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("plan") / "mini.pt")


def score_lead(game):
    """A leaf value: seat 0's points minus seat 1's as the table stands (cheap and exact to recompute)."""

    def value(states):
        scores = game.scores(states)
        return (scores[:, 0] - scores[:, 1]).double()

    return value


def live_states(game, n: int, seed: int, plies: int):
    """True states of games after ``plies`` random decisions (the live ones)."""
    gen = torch.Generator().manual_seed(seed)
    s = game.init(n, gen)
    for _ in range(plies):
        s = game.step(s, sample_from_probs(game.legal_mask(s).float(), gen))
    return index_state(s, (~game.is_terminal(s)).nonzero().squeeze(1))


# A plain recursive planner, one game and one world at a time, for the batched one to equal ------
def reference_values(search: PlanSearch, state, seat: int, roots: list[int], worlds) -> torch.Tensor:
    """[k, d] the plan's value of each root move in each world (``worlds``: the d true states with
    their decks reshuffled), computed by recursion over sets of worlds: at the decider's
    decisions inside the plan the worlds that look the same to it (``infoset``) or each world on
    its own (``per_world``) choose the move with the best total over them."""
    game, cfg = search.game, search.config
    plies = cfg.rollout_plies

    def step(st, action):
        st = index_state(st, torch.tensor([0]))
        return game.step(st, torch.tensor([action]))

    def advance(row):
        """Play the row on until it ends, is valued, or the decider decides inside the plan:
        ('value', v) or ('node', row)."""
        st, turn, prev_opp, tail = row
        while True:
            if bool(game.is_terminal(st)[0]):
                return "value", float(game.returns(st)[0, seat])
            mover = int(game.current_player(st)[0])
            mine = mover == seat
            if tail < 0 and not mine and turn >= cfg.plan_depth:
                tail = 0
            if plies is not None and tail >= plies:
                v = float(search.leaf_value(st)[0])
                return "value", v if seat == 0 else -v
            if tail < 0 and mine:
                return "node", (st, turn + int(prev_opp), False, tail)
            obs = game.observe(st, mover)
            plays = search.opponent_rollout if not mine and search.opponent_rollout is not None else search.rollout
            action = int(plays.act(obs, game.legal_mask(st), torch.zeros(1))[0])
            prev_opp = prev_opp or (tail < 0 and not mine)
            tail = tail + 1 if tail >= 0 else tail
            st = step(st, action)

    def values(rows, ids):
        """Values of ``rows`` (lists of (state, turn, prev_opp, tail)); ``ids``: their worlds."""
        out = [None] * len(rows)
        nodes = {}
        for i, row in enumerate(rows):
            kind, got = advance(row)
            if kind == "value":
                out[i] = got
            else:
                key = bytes(game.observe(got[0], seat)[0].tolist()) if cfg.plan_choice == "infoset" else ids[i]
                nodes.setdefault(key, []).append((i, got))
        for members in nodes.values():
            st0 = members[0][1][0]
            ranking, probs = search.rank(game.observe(st0, seat), game.legal_mask(st0))
            width = min(cfg.plan_candidates, ranking.shape[1])
            top = ranking.topk(width, dim=1)
            moves = [int(a) for a, v in zip(top.indices[0], top.values[0]) if torch.isfinite(v)]
            best, best_total = None, -float("inf")
            for a in moves:
                children = [(step(row[0], a), row[1], False, -1) for _, row in members]
                got = values(children, [ids[i] for i, _ in members])
                if sum(got) > best_total:
                    best, best_total = got, sum(got)
            for (i, _), v in zip(members, best):
                out[i] = v
        return out

    d = worlds.turn.shape[0]
    table = torch.zeros(len(roots), d, dtype=torch.float64)
    for s, a in enumerate(roots):
        rows = [(step(index_state(worlds, torch.tensor([j])), a), 1, False, -1) for j in range(d)]
        table[s] = torch.tensor(values(rows, list(range(d))), dtype=torch.float64)
    return table


def lead_and_hands(game):
    """A leaf value that also weighs the cards each seat holds (so the deck's draws matter to it,
    and knowing the deck's order helps): the score lead plus a small weight per card in hand."""
    D = game.rules.deck_size
    weight = (torch.arange(D) % 7).double() / 20

    def value(states):
        held = [(game.observe(states, seat)[:, :D] == 1).double() @ weight for seat in (0, 1)]
        return score_lead(game)(states) + held[0] - held[1]

    return value


def small_tree(**settings) -> SearchConfig:
    """A tree small enough for the recursion (3 root moves, 2 below), valued after 2 decisions,
    the root's move the best mean (no prior, no paired test); max_batch: a few roots a chunk."""
    return SearchConfig(
        candidates=3, plan_candidates=2, rollout_policy="base", rollout_plies=2, min_z=0.0, prior_weight=0.0, **settings
    )


@pytest.mark.parametrize("depth", [1, 2])
def test_the_batched_plan_equals_a_plain_recursive_one(mini_checkpoint, depth):
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    states = live_states(game, 6, seed=4, plies=9)  # card and draw decisions of both seats
    player = game.current_player(states)
    obs, mask = game.observe(states, player), game.legal_mask(states)
    planned = {}
    for choice in ("infoset", "per_world"):
        config = small_tree(oracle=True, plan_depth=depth, plan_choice=choice, determinizations=3, max_batch=40)
        search = PlanSearch(game, base, config, leaf_value=lead_and_hands(game))
        candidates, valid, _, _ = search.root_candidates(obs, mask)
        search.generator.manual_seed(11)
        worlds = search.deal_worlds(obs, 3, state=states)
        planned[choice] = search.plan_values(worlds, obs, candidates, valid, 3)
        assert torch.equal(worlds.arena, game.shuffle_deck(states, 3, torch.Generator().manual_seed(11)).arena)
        for i in range(states.turn.shape[0]):
            roots = [int(a) if bool(v) else int(candidates[i, 0]) for a, v in zip(candidates[i], valid[i])]
            expected = reference_values(
                search,
                index_state(states, torch.tensor([i])),
                int(player[i]),
                roots,
                index_state(worlds, torch.arange(3 * i, 3 * i + 3)),
            )
            assert torch.allclose(planned[choice][i], expected), (choice, i, planned[choice][i], expected)
        # ... and the move played is the best mean over the worlds (no prior, no paired test)
        search.generator.manual_seed(11)
        chosen = search.decide(obs, mask, state=states)
        best = planned[choice].mean(dim=2).masked_fill(~valid, -torch.inf).argmax(dim=1)
        forced = valid.sum(dim=1) == 1
        assert torch.equal(chosen[~forced], candidates.gather(1, best[:, None]).squeeze(1)[~forced])
    # a world that chooses its own later moves knows its deck: never worse (at depth 2, better somewhere)
    assert bool((planned["per_world"] >= planned["infoset"] - 1e-9).all())
    assert depth == 1 or bool((planned["per_world"] > planned["infoset"] + 1e-9).any())


def two_turn_combination(game):
    """(true state, seat 0 to move) in a mini game: seat 0 holds red 5 and red 6 and green 2, blue
    2, blue 3, nothing is on the table and 8 cards are left. Opening red with the 5 scores -5
    until the 6 follows a turn later (+1); every single play loses points, every discard keeps 0."""
    r = game.rules
    assert (r.n_colors, r.n_ranks, r.n_wagers, r.hand_size) == (3, 5, 1, 5), "mini rules expected"
    D = r.deck_size
    obs = torch.zeros(1, game.obs_size, dtype=torch.uint8)
    obs[0, [4, 5, 7, 13, 14]] = 1  # my hand: red 5, red 6, green 2, blue 2, blue 3
    obs[0, D] = D - 2 * r.hand_size
    obs[0, D + 2] = r.n_colors  # nothing discarded this turn
    return game.determinize(obs, 1, torch.Generator().manual_seed(0)), obs


@pytest.mark.parametrize("choice", ["infoset", "per_world"])
@pytest.mark.parametrize("oracle", [True, False], ids=["oracle", "belief"])
def test_depth_two_finds_the_two_turn_combination_that_depth_one_cannot_see(choice, oracle):
    """Knowing the opponent's hand or drawing it: the combination needs no sight of it."""
    game = LostCitiesGame.from_params("mini")
    state, obs = two_turn_combination(game)
    mask = game.legal_mask(state)
    passive = BotPlayer(make_bot(game, "discard_only"), game)  # the opponent never scores
    opening = game.rules.action_id("play", "red", 5)
    picks = {}
    for depth in (1, 2):
        config = SearchConfig(
            oracle=oracle,
            plan_depth=depth,
            plan_choice=choice,
            candidates=game.num_actions,
            plan_candidates=game.num_actions,
            determinizations=4,
            rollout_plies=2,
            min_z=0.0,
        )
        search = PlanSearch(game, passive, config, rollout_policy=passive, leaf_value=score_lead(game))
        picks[depth] = int(search.decide(obs, mask, state=state)[0])
        rows = {r["action"]: r for r in search.last.rows(0)}
        assert rows[opening]["mean"] == (-5.0 if depth == 1 else 1.0)
    assert picks[1] != opening and picks[2] == opening


def test_the_planner_never_plays_an_illegal_move_and_the_arena_passes_it_the_true_state(mini_checkpoint, monkeypatch):
    spec = (
        f"search[oracle=true,plan_depth=2,rollout_policy=base,determinizations=3,candidates=3]:{mini_checkpoint}@greedy"
    )
    planner = load_player(spec)
    game = planner.game
    assert isinstance(planner.search, PlanSearch) and planner.sees_state
    checked = game.step
    monkeypatch.setattr(game, "step", lambda s, a, check=False: checked(s, a, check=True))  # illegal: an error
    result = play_match(game, planner, load_player("heuristic_balanced", game), 8, seed=3)
    assert result.games == 8 and planner.stats.decisions > 0 and planner.search.expanded > planner.stats.decisions
    states = live_states(game, 16, seed=8, plies=17)
    player = game.current_player(states)
    actions = planner.act(game.observe(states, player), game.legal_mask(states), state=states)
    assert bool(game.legal_mask(states).gather(1, actions[:, None]).all())


def test_the_oracle_needs_the_true_state_and_the_one_decision_search_does_not_plan(mini_checkpoint):
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    states = live_states(game, 4, seed=1, plies=6)
    obs, mask = game.observe(states, game.current_player(states)), game.legal_mask(states)
    for config in (
        SearchConfig(oracle=True, rollout_policy="base", determinizations=2),
        SearchConfig(oracle=True, plan_depth=1, rollout_policy="base", determinizations=2),
    ):
        search = (PlanSearch if config.plan_depth else RolloutSearch)(game, base, config)
        with pytest.raises(ValueError, match="true state"):
            search.decide(obs, mask)
        assert bool(mask.gather(1, search.decide(obs, mask, state=states)[:, None]).all())
    with pytest.raises(ValueError, match="PlanSearch"):
        RolloutSearch(game, base, SearchConfig(oracle=True, plan_depth=2, rollout_policy="base"))


def test_the_one_decision_oracle_deals_the_opponents_true_hand(mini_checkpoint):
    """The oracle's worlds of the one-decision search: the true state, only the deck reshuffled."""
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    search = RolloutSearch(game, base, SearchConfig(oracle=True, rollout_policy="base", determinizations=5))
    states = live_states(game, 6, seed=2, plies=11)
    worlds = search.oracle_worlds(states, 5)
    for seat in (0, 1):
        assert torch.equal(game.observe(worlds, seat), game.observe(states, seat).repeat_interleave(5, dim=0))


def test_the_oracle_option_reads_true_and_false_on_the_command_line():
    import argparse

    from deepcfr.cli.common import add_search_options, search_settings

    parser = argparse.ArgumentParser()
    add_search_options(parser)
    assert search_settings(parser.parse_args(["--search-oracle", "false", "--search-plan-depth", "2"])) == {
        "oracle": False,
        "plan_depth": 2,
    }
    assert search_settings(parser.parse_args(["--search-oracle", "true"])) == {"oracle": True}


@pytest.mark.parametrize("faced", [None, "heuristic_balanced"])
def test_the_plan_over_belief_worlds_equals_a_plain_recursive_one(mini_checkpoint, faced):
    """Worlds dealt from the decider's observation (its hand and the table known, the opponent's
    hand and the deck drawn): the same tree as the recursion's over those worlds, the opponent's
    seat played by the faced bot where there is one."""
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    states = live_states(game, 5, seed=6, plies=13)
    player = game.current_player(states)
    obs, mask = game.observe(states, player), game.legal_mask(states)
    config = small_tree(plan_depth=2, determinizations=4, max_batch=50)
    search = PlanSearch(game, base, config, leaf_value=lead_and_hands(game))
    if faced is not None:
        search.face(load_player(faced, game))
    candidates, valid, _, _ = search.root_candidates(obs, mask)
    worlds = search.deal_worlds(obs, 4)
    planned = search.plan_values(worlds, obs, candidates, valid, 4)
    for i in range(states.turn.shape[0]):
        roots = [int(a) if bool(v) else int(candidates[i, 0]) for a, v in zip(candidates[i], valid[i])]
        here = index_state(worlds, torch.arange(4 * i, 4 * i + 4))
        expected = reference_values(search, index_state(states, torch.tensor([i])), int(player[i]), roots, here)
        assert torch.allclose(planned[i], expected), (i, planned[i], expected)


def test_the_belief_worlds_agree_with_what_the_decider_saw_and_differ_where_it_cannot_see(mini_checkpoint):
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    search = PlanSearch(game, base, SearchConfig(plan_depth=2, rollout_policy="base", determinizations=6))
    states = live_states(game, 6, seed=9, plies=15)
    player = game.current_player(states)
    obs = game.observe(states, player)
    worlds = search.deal_worlds(obs, 6)
    seats = player.repeat_interleave(6)
    assert torch.equal(game.observe(worlds, seats), obs.repeat_interleave(6, dim=0))
    theirs = game.observe(worlds, 1 - seats).view(6, 6, -1)
    assert any(not torch.equal(theirs[i, 0], theirs[i, j]) for i in range(6) for j in range(1, 6))


def test_the_planner_answers_within_its_time_limit_with_fewer_worlds(mini_checkpoint):
    base = load_player(f"{mini_checkpoint}@greedy")
    game = base.game
    states = live_states(game, 6, seed=3, plies=10)
    obs, mask = game.observe(states, game.current_player(states)), game.legal_mask(states)
    done = {}
    for limit in (None, 1.0, 1000.0):
        config = SearchConfig(
            plan_depth=2, rollout_policy="base", determinizations=16, min_determinizations=4, time_limit_s=limit
        )
        search = PlanSearch(game, base, config)
        search.clock = map(float, range(10**6)).__next__  # a second a reading: the first round takes 1 s
        actions = search.decide(obs, mask)
        assert bool(mask.gather(1, actions[:, None]).all())
        done[limit] = search.last.determinizations
        assert search.last.mean.shape == (6, config.candidates)
    assert done == {None: 16, 1.0: 4, 1000.0: 16}
