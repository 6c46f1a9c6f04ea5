"""deepcfr: batched Deep CFR for two-player imperfect-information card games."""

__version__ = "0.1.0"
