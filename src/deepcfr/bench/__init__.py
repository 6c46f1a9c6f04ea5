"""Benchmarks, one module per layer they measure (``deepcfr bench ...`` runs them):

- ``engine``: random-play decisions per second of a batched game engine against its reference;
- ``forward``: the bare forward pass of a network (time per call, states per second, FLOP/s
  against the matrix-multiply peak), the bound the other benchmarks compare against;
- ``throughput``: a real trainer's traversal and training throughput against that bound;
- ``search``: rollout decisions per second of one batched search call against that bound.

This package sits above the layers it measures and imports from them; nothing below imports it
(tests/test_layering.py).
"""
