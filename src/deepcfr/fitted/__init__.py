"""Fitted artefacts: networks fitted by regression on recorded games, beside the champion they ship
with and used by the layers above (players, search, evaluation), not by the Trainer.

- ``value_fn``: the value function of the full state (``FullStateValue``), which the arena's luck
  corrections (evaluate/variance.py) and the search's cut-short rollouts use; fitted on the
  positions of recorded matches (``collect_positions``, ``fit_value``), saved and loaded as a
  checkpoint of kind ``value_function``;
- ``hand_belief``: a learned belief of the opponent's hand (``HandBelief``) for the search's
  determinizations, fitted on the same positions (``fit_hand_belief``), a checkpoint of kind
  ``hand_belief``.

The fitting lives here with what it fits: ``deepcfr fit-value`` and ``deepcfr fit-belief`` call it,
and ``players.shipped`` loads the files shipped beside the champion. The package reads games, cfr's
network, checkpoints and evaluate's arena only.
"""
