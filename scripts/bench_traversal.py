"""Traversal and training throughput of a real trainer against the forward-pass bound: the same
as ``deepcfr bench traversal`` (see deepcfr.train.throughput_bench), runnable without installing.

    PYTHONPATH=src python scripts/bench_traversal.py --config lost_cities/cpu.yaml --repeats 3
    PYTHONPATH=src python scripts/bench_traversal.py --config lost_cities/default.yaml \
        --set traversal.traversals_per_player=1024 --set advantage.train_steps=20 --json
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from deepcfr.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", "traversal", *sys.argv[1:]]))
