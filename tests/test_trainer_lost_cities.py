"""Smoke runs of the trainer on Lost Cities (mini variant): outcome sampling, league opponents,
arena evaluation, compact memories, checkpoint round trip."""

import math

import torch

from deepcfr.players import load_player
from deepcfr.train.agent import load_agent
from deepcfr.train.config import load_config
from deepcfr.train.run import Run
from deepcfr.train.trainer import Trainer


def mini(*extra):
    return load_config(
        None,
        [
            "game.name=lost_cities",
            "game.variant=mini",
            "traversal.algorithm=outcome",
            "traversal.traversals_per_player=48",
            "traversal.chunk_size=24",
            "network.hidden_size=16",
            "advantage.train_steps=2",
            "advantage.batch_size=32",
            "strategy.train_steps=2",
            "strategy.batch_size=32",
            "memory.advantage_capacity=5000",
            "memory.strategy_capacity=5000",
            "eval.every=2",
            "eval.games=4",
            "eval.opponents=[random]",
            "run.progress=false",
            "strategy.final_train_steps=0",
            *extra,
        ],
    )


def test_lost_cities_iterations_with_evaluation():
    trainer = Trainer(mini("run.iterations=2"), load_player=load_player)
    m1 = trainer.run_iteration()
    m2 = trainer.run_iteration()
    for m in (m1, m2):
        assert m["traversal/traversals"] == 96
        assert m["traversal/decisions"] > 96 and m["traversal/avg_batch"] > 1
        assert math.isfinite(m["loss/advantage_p0"]) and math.isfinite(m["loss/strategy"])
    # the evaluation plays each reported policy (deals from the trainer's eval stream)
    from deepcfr.evaluate.arena import play_match
    from deepcfr.games.bots import make_bot
    from deepcfr.seeding import derive_seed

    eval_stream = torch.Generator().manual_seed(derive_seed(trainer.config.run.seed, "eval"))
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=eval_stream))
    agent = trainer.agent()
    for kind in ("average", "current"):
        expected = play_match(trainer.game, agent.policy(kind), make_bot(trainer.game, "random"), games=4, seed=seed)
        assert m2[f"eval/random/{kind}/win_rate"] == expected.win_rate
        assert m2[f"eval/random/{kind}/mean_score_diff"] == expected.mean_score_diff
        assert m2[f"eval/random/{kind}/score_diff_ci95"] == expected.score_diff_ci95
    # compact samples: a tenth of the float32 features or less
    assert m2["memory/advantage_bytes_per_sample"] * 10 <= m2["memory/feature_bytes_per_sample"]
    state = trainer.game.init(8, torch.Generator().manual_seed(0))
    probs = trainer.agent().policy("current")(trainer.game.observe(state, 0), trainer.game.legal_mask(state))
    assert torch.allclose(probs.sum(dim=1), torch.ones(8))


def test_lost_cities_league_run_checkpoints_and_loads(tmp_path):
    config = mini(
        "run.iterations=2",
        "traversal.opponent=league",
        "league.weight_recent=0.5",
        "league.weight_anchor=0.2",
        "league.anchor=random",
        "eval.every=0",
    )
    with Run(tmp_path / "run", config, console=False) as run:
        trainer = Trainer(config, run, load_player=load_player)
        trainer.train()
    assert len(trainer.league) == 2
    agent = load_agent(tmp_path / "run" / "checkpoints" / "latest.pt")
    state = agent.game.init(6, torch.Generator().manual_seed(1))
    obs, mask = agent.game.observe(state, agent.game.current_player(state)), agent.game.legal_mask(state)
    for kind in ("average", "current"):
        probs = agent.policy(kind, greedy=kind == "current")(obs, mask)
        assert (probs[~mask] == 0).all() and torch.allclose(probs.sum(dim=1), torch.ones(6))
