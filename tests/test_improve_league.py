"""Expert iteration's self-play against a league (issue 65, piece 4): improve.opponents as
{entry: weight}, the batches of a round apportioned to the entries by weight and interleaved; `past`
limited to a window of the last accepted networks; `population` cycling the benchmark population's
members; the teacher's rollouts facing each batch's opponent."""

from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from deepcfr.improve import Improver, improve_config
from deepcfr.improve.config import ImproveConfig
from deepcfr.train.config import ConfigError
from search_helpers import tiny_checkpoint


def test_a_list_cycles_in_its_order_as_before():
    cfg = ImproveConfig(opponents=["self", "random", "past"])
    assert cfg.opponent_schedule(7) == ["self", "random", "past", "self", "random", "past", "self"]
    twice = ImproveConfig(opponents=["self", "self", "random"])  # a list may weigh an entry by naming it twice
    assert twice.opponent_schedule(6) == ["self", "self", "random"] * 2


@settings(max_examples=80, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["self", "past", "population", "random", "heuristic_careful"]),
        st.integers(1, 9),
        min_size=1,
    ),
    st.integers(1, 60),
)
def test_every_entry_gets_its_share_of_the_batches_within_one(weights, batches):
    """Smooth weighted round robin: after any number of batches each entry has its weight's share
    of them, off by less than one batch, and a full cycle (the weights' sum) gives exactly the weights."""
    cfg = ImproveConfig(opponents={k: float(w) for k, w in weights.items()})
    total = sum(weights.values())
    for n in (batches, total):
        counts = Counter(cfg.opponent_schedule(n))
        for entry, weight in weights.items():
            assert abs(counts[entry] - n * weight / total) < 1, (weights, n, counts)
    assert Counter(cfg.opponent_schedule(total)) == Counter(weights)


def test_the_weights_interleave_the_entries():
    schedule = ImproveConfig(opponents={"self": 3, "population": 1}).opponent_schedule(8)
    assert schedule == ["self", "self", "population", "self"] * 2  # not all of self's batches first


@pytest.mark.parametrize(
    "opponents,message",
    [
        ("{self: 0}", "weight of 'self' must be positive"),
        ("{self: -1, random: 1}", "must be positive"),
        ("{no such player!: 1}", "player spec"),
    ],
)
def test_a_bad_league_is_refused_by_name(opponents, message):
    with pytest.raises(ConfigError, match=message):
        improve_config(None, overrides=[f"improve.opponents={opponents}"])


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    torch.set_num_threads(1)
    return str(tiny_checkpoint(tmp_path_factory.mktemp("league") / "mini.pt"))


def _chunks(start, overrides, past=0):
    config = improve_config(
        start,
        overrides=[
            "improve.teacher=search[determinizations=2,candidates=2]:learner",
            "improve.games_per_round=16",
            "improve.batch_games=2",
            "improve.eval_games=0",
            *overrides,
        ],
    )
    improver = Improver(config)
    improver.past = [improver.current.state_dict()] * past
    return improver, improver.label_chunks(1)


def test_the_past_window_plays_only_the_last_accepted_networks(start):
    improver, (chunks, networks) = _chunks(start, ["improve.opponents=[past]", "improve.past_window=2"], past=5)
    names = [c.opponent_network for c in chunks]
    assert names == ["past_3", "past_4"] * 4 and set(networks) == {"learner", "past_3", "past_4"}
    _, (chunks, _) = _chunks(start, ["improve.opponents=[past]"], past=3)
    assert [c.opponent_network for c in chunks] == ["past_0", "past_1", "past_2"] * 2 + ["past_0", "past_1"]


def test_the_population_entry_cycles_the_members_that_play_the_game(start):
    """Mini rules: the bots of the population play them, the networks of the classic rules do not;
    each population batch faces the next member, the learner's seat alone labelled."""
    improver, (chunks, _) = _chunks(start, ["improve.opponents={self: 1, population: 3}"])
    members = [m.spec for m in improver.league_members()]
    assert members and all(m.kind == "bot" for m in improver.league_members())  # the classic networks skipped
    faced = [c.opponent for c in chunks if c.opponent is not None]
    assert faced == [members[k % len(members)] for k in range(len(faced))]
    assert len(faced) == 6 and sum(c.opponent is None and c.opponent_network is None for c in chunks) == 2
    later = [c.opponent for c in improver.label_chunks(3)[0] if c.opponent is not None]  # round 3 goes on
    assert later == [members[k % len(members)] for k in range(12, 18)]


class SeatRecorder:
    """A bot that records the seat of every observation it is asked to move from."""

    def __init__(self, game, bot: str):
        from deepcfr.players import load_player

        self.game, self.bot, self.seats = game, load_player(bot, game), []

    def act(self, obs, mask, generator=None):
        self.seats.append(self.game.obs_player(obs))
        return self.bot.act(obs, mask, generator)


def test_a_search_that_faces_an_opponent_plays_it_in_the_opponents_seat_of_its_rollouts():
    """face(player): the rollouts play every move of the opponent's seat by that player and every
    move of the decider's seat by the rollout policy; face(None) gives both seats back to it."""
    from deepcfr.games.registry import make_game
    from deepcfr.players import load_player
    from deepcfr.search import RolloutSearch, SearchConfig
    from search_helpers import decision_batch

    game = make_game("lost_cities", variant="mini")
    obs, mask = decision_batch(game, n=24, seed=4)
    zero = game.obs_player(obs) == 0  # seat 0 decides: its rollouts' seat-1 moves are the opponent's
    obs, mask = obs[zero], mask[zero]
    config = SearchConfig(rollout_policy="heuristic_balanced", determinizations=3, candidates=2)
    own, faced = SeatRecorder(game, "heuristic_balanced"), SeatRecorder(game, "discard_only")
    search = RolloutSearch(game, load_player("heuristic_balanced", game), config, rollout_policy=own)
    search.face(faced)
    search.decide(obs, mask)
    assert set(torch.cat(own.seats).tolist()) == {0} and set(torch.cat(faced.seats).tolist()) == {1}
    search.face(None)
    own.seats.clear()
    faced.seats.clear()
    search.decide(obs, mask)
    assert not faced.seats and set(torch.cat(own.seats).tolist()) == {0, 1}


def test_self_play_has_the_teacher_face_each_batchs_opponent(start, monkeypatch):
    """A batch against a bot: the teacher's rollouts play that bot; a self-play batch: nobody faced."""
    from deepcfr.search import RolloutSearch

    faced = []
    original = RolloutSearch.face
    monkeypatch.setattr(
        RolloutSearch, "face", lambda self, opponent: faced.append(opponent) or original(self, opponent)
    )
    improver, _ = _chunks(
        start, ["improve.opponents=[self, discard_only]", "improve.games_per_round=4", "improve.executor=inline"]
    )
    positions, metrics = improver.self_play(1)
    assert metrics["selfplay/positions"] > 0
    assert [None if f is None else f.name for f in faced] == [None, "discard_only"]
