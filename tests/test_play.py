"""Terminal play through streams: entries, refusals, probabilities, final screens (no terminal needed;
tests/test_play_terminal.py drives the real command through a pseudo-terminal)."""

from __future__ import annotations

import io

import pytest
import torch

from deepcfr.games.bots import make_bot
from deepcfr.games.lost_cities import LostCitiesReference
from deepcfr.games.registry import make_game
from deepcfr.play import make_view, play_game
from deepcfr.play.session import PROBS, QUIT, observation, parse_entry
from deepcfr.players import BotPlayer, NetworkPlayer, Seated


def _play(game_name: str, entries: str, opponent=None, seat: int = 0, seed: int = 3, **kw):
    game = make_game(game_name, **({"variant": "mini"} if game_name == "lost_cities" else {}))
    opponent = opponent or Seated(BotPlayer(make_bot(game, "random"), game), seed=seed + 1)
    out = io.StringIO()
    outcome = play_game(make_view(game), opponent, seat, seed, io.StringIO(entries), out, plain=True, width=120, **kw)
    return outcome, out.getvalue()


def test_parse_entry_numbers_names_and_refusals():
    game = make_game("lost_cities", variant="mini")
    view = make_view(game)
    ref = LostCitiesReference.new(game.rules, 3)
    choices = [(a, view.label(ref, a)) for a in ref.legal_actions()]
    assert parse_entry("1", choices, view, ref) == (choices[0][0], None)
    assert parse_entry(f" {choices[-1][1].upper()} ", choices, view, ref) == (choices[-1][0], None)
    assert parse_entry("q", choices, view, ref) == (QUIT, None)
    assert parse_entry("?", choices, view, ref) == (PROBS, None)
    for entry, reason in [
        ("0", "there is no move 0"),
        ("-3", "there is no move -3"),
        ("", "empty entry"),
        ("play", "could be any of"),
        ("hello", "did not understand 'hello'"),
        ("draw deck", "draw deck is not allowed now: illegal action"),
    ]:
        action, why = parse_entry(entry, choices, view, ref)
        assert action is None and reason in why, (entry, why)


def test_kuhn_full_game_to_final_screen():
    outcome, text = _play("kuhn", "2\n" * 3)
    assert outcome.finished and outcome.exit_code == 0
    assert "Your card:" in text and "random's card: hidden" in text and "Pot: 2 chips" in text
    assert "game over" in text and "Cards: You" in text
    assert ("wins by" in text) or ("You win by" in text)


def test_liars_dice_full_game_to_the_call_and_its_count():
    # always the lowest legal bid, so the game ends when someone calls (or at the top bid, forced)
    outcome, text = _play("liars_dice", "1\n" * 13, seat=1, seed=5)
    assert outcome.finished and outcome.exit_code == 0
    ref = outcome.ref
    assert "Your die:" in text and "random's die: hidden" in text and "1) bid " in text
    caller = ["random", "You"][(len(ref.history) - 1) % 2]
    assert f"{caller} called the bid" in text and ("the bid holds" if ref.bid_holds() else "the bid fails") in text
    winner = ["random", "You"][0 if ref.returns()[0] > 0 else 1]
    assert f"{winner} win" in text and "by 1 chip." in text


def test_every_game_has_a_terminal_view_and_others_are_refused_by_name():
    from deepcfr.games.registry import game_names

    for name in game_names():
        assert make_view(make_game(name)).game_name == name
    with pytest.raises(ValueError, match="no terminal view for game 'chess'"):
        make_view(type("Chess", (), {"name": "chess"})())


def test_lost_cities_game_to_final_scoring_and_refusals():
    outcome, text = _play("lost_cities", "zzz\n1000\n" + "1\n" * 400, seat=1)
    assert outcome.finished
    assert "Refused: did not understand 'zzz'" in text and "Refused: there is no move 1000" in text
    s0, s1 = outcome.ref.scores()
    assert f"random's expeditions: {s0} points" in text and f"Your expeditions: {s1} points" in text
    assert "| values | cost | x wagers | bonus | points|" in text
    assert f"Score: random {s0}, You {s1}." in text
    assert "Deck: 7 cards left" in text  # mini: 18 cards, two hands of 5, and random drew one


def test_end_of_input_and_quit_leave_cleanly():
    outcome, text = _play("leduc", "")
    assert outcome.exit_code == 0 and not outcome.finished and "End of input: leaving the game." in text
    outcome, text = _play("leduc", "q\n")
    assert outcome.exit_code == 0 and "You left the game." in text


def test_agent_probabilities_on_request():
    game = make_game("leduc")

    def lopsided(obs, mask):  # prefers the last legal action
        weights = mask.float() * torch.tensor([1.0, 2.0, 7.0])
        return weights / weights.sum(dim=1, keepdim=True)

    agent = Seated(NetworkPlayer(game, lopsided, "agent@7"), seed=0)
    outcome, text = _play("leduc", "?\n2\np\nq\n", opponent=agent, seat=1, seed=0)
    assert "agent@7's probabilities when it chose" in text
    assert "77.8%" in text and "22.2%" in text  # 7/9 and 2/9 over call and bet
    assert "<- played" in text


def test_greedy_agent_and_observation_rows_match_the_batched_engine():
    game = make_game("lost_cities", variant="mini")
    ref = LostCitiesReference.new(game.rules, 5)
    obs, mask = observation(game, ref, 0)

    state = game.init_from_deal(torch.tensor([ref.hands[0] + ref.hands[1] + ref.deck]))
    assert torch.equal(obs, game.observe(state, 0)) and torch.equal(mask, game.legal_mask(state))
    policy = lambda o, m: torch.softmax(torch.arange(m.shape[1]).float(), 0)[None] * m  # noqa: E731
    decision = Seated(NetworkPlayer(game, policy, "g", greedy=True)).decide(obs, mask)
    action, probs = decision.action, decision.probs
    assert action == int(torch.nonzero(mask[0])[-1]) and probs.sum().item() == pytest.approx(1.0)


def test_play_command_against_a_checkpoint(tmp_path, monkeypatch, capsys):
    from deepcfr.checkpoints import make_meta, save_checkpoint
    from deepcfr.cli.main import main
    from deepcfr.train.config import TrainConfig
    from deepcfr.train.trainer import Trainer

    config = TrainConfig.model_validate(
        {
            "game": {"name": "kuhn"},
            "traversal": {"algorithm": "external"},
            "memory": {"advantage_capacity": 64, "strategy_capacity": 64, "augment": False},
            "network": {"hidden_size": 8},
        }
    )
    trainer = Trainer(config)  # untrained networks are enough to play
    path = tmp_path / "kuhn.pt"
    save_checkpoint(path, {**trainer.state_dict(), "meta": make_meta(config, 0, trainer.game)})
    record = tmp_path / "games.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n1\n1\n"))
    code = main(
        [
            "play",
            "--checkpoint",
            str(path),
            "--seat",
            "1",
            "--seed",
            "4",
            "--show-probs",
            "--plain",
            "--record",
            str(record),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Kuhn poker" in out and "kuhn.pt" in out  # the opponent is named by its spec
    assert "<- played" in out and "%" in out  # its move, with its probabilities
    assert "game over" in out and "Recorded the finished game" in out
    assert main(["play", "--checkpoint", str(path), "--vs", "random"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["play", "--checkpoint", str(path), "--game", "leduc"]) == 2
    assert "is for kuhn, but this match plays leduc" in capsys.readouterr().err
    # a spec form as in arena: a bot of another game, and a search over a bot
    assert (
        main(
            [
                "play",
                "--vs",
                "search:heuristic_balanced",
                "--variant",
                "mini",
                "--seed",
                "1",
                "--plain",
                "--search-determinizations",
                "2",
            ]
        )
        == 0
    )
    assert "search:heuristic_balanced" in capsys.readouterr().out


def test_ctrl_c_during_output_is_raised_after_it():
    # A Ctrl-C while rich is printing must not cut the output (it could leave the console
    # buffering, so the farewell message would be lost); it is raised once the output is done.
    import os
    import signal

    import pytest

    from deepcfr.play.session import interrupts_deferred

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # CI may start us ignoring it
    try:
        finished = False
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                os.kill(os.getpid(), signal.SIGINT)
                finished = True
        assert finished
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # an ignored Ctrl-C stays ignored
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, inherited)
