"""Scale-out traversal: executors, shared-memory weights and the central inference server.

- :mod:`.chunks`: the unit of work (a seeded chunk of lockstep traversals) and ``run_chunk``,
  the one worker function every executor uses.
- :mod:`.base`: the executor interface (``TraversalExecutor``) and its errors.
- :mod:`.executors`: ``InlineExecutor``, ``ProcessExecutor`` (spawn-context workers, optionally
  behind an inference server) and ``make_executor`` (from a training config).
- :mod:`.shm`: shared-memory blocks and per-version network weights.
- :mod:`.inference_server`: ``InferenceServer`` (process owning the networks on its device),
  ``InferenceClient`` and ``NetworkProxy`` (a remote network as a local callable).
- :mod:`.worker`: the worker process loop; :mod:`.ray_executor`: the same worker as Ray actors;
  :mod:`.child`: threads and signals of every child process.

This package builds on ``cfr`` and ``games``; it knows nothing of a particular game (games are
rebuilt by name in each process) nor of the trainer.
"""
