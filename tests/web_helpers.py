"""Shared by the ONNX export and the web tests: Lost Cities games recorded position by position
from the Python engines (the reference engine and the batched one side by side), the oracle the
exported network and the JavaScript engine are compared with."""

from __future__ import annotations

import torch

from deepcfr.games.lost_cities.engine import LostCitiesGame
from deepcfr.games.lost_cities.reference import LostCitiesReference


def record_game(game: LostCitiesGame, players, seed: int, max_decisions: int | None = None) -> dict:
    """One game of ``players`` (seat 0, seat 1; anything with ``act``) dealt by ``seed``: the deal,
    and at each decision the mover's compact observation (the batched engine's, checked against the
    reference engine's), its features, the legal actions, both scores and the action taken; the
    final result. ``max_decisions`` cuts the recording short (the result is then of the cut game)."""
    ref = LostCitiesReference.new(game.rules, seed)
    deal = ref.deal()
    state = game.init_from_deal(torch.tensor([deal]))
    generator = torch.Generator().manual_seed(seed + 17)
    steps = []
    while not ref.is_terminal() and (max_decisions is None or len(steps) < max_decisions):
        seat = ref.current_player()
        obs = game.observe(state, seat)
        mask = game.legal_mask(state)
        assert obs[0].tolist() == ref.observe(seat), "the batched and reference observations differ"
        assert mask[0].tolist() == ref.legal_mask()
        action = int(players[seat].act(obs, mask, generator)[0])
        steps.append(
            {
                "seat": seat,
                "obs": obs[0].tolist(),
                "features": game.encode(obs)[0].tolist(),
                "legal": ref.legal_actions(),
                "scores": list(ref.scores()),
                "action": action,
            }
        )
        ref.apply(action)
        state = game.step(state, torch.tensor([action]))
    final = {
        "scores": list(ref.scores()),
        "expedition_scores": [ref.expedition_scores(0), ref.expedition_scores(1)],
        "finished": ref.is_terminal(),
        "returns": list(ref.returns()),
        "observations": [ref.observe(0), ref.observe(1)],
    }
    return {
        "rules": game.config_dict(),
        "deal": deal,
        "players": [p.name for p in players],
        "steps": steps,
        "final": final,
    }


def positions(records: list[dict]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(observations uint8, features float32, legal masks bool) of every recorded decision."""
    from deepcfr.games.lost_cities.rules import LostCitiesRules

    steps = [s for r in records for s in r["steps"]]
    game = LostCitiesGame(LostCitiesRules(**records[0]["rules"]))
    obs = torch.tensor([s["obs"] for s in steps], dtype=torch.uint8)
    features = torch.tensor([s["features"] for s in steps], dtype=torch.float32)
    masks = torch.zeros(len(steps), game.num_actions, dtype=torch.bool)
    for i, s in enumerate(steps):
        masks[i, s["legal"]] = True
    return obs, features, masks
