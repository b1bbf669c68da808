"""What a `processes` worker needs, imported once by the forkserver that forks the workers
(runner/executors.py): each worker then starts with it loaded instead of importing it again
(litellm alone costs ~3 CPU-s per process). Workers are forked from the process that imported
this module, so importing it must not start Python threads (numpy's BLAS pool, which `distributed`
brings, is made safe across fork by OpenBLAS itself; Dask's own forkserver preload has it too).
"""

import distributed  # noqa: F401

import corral_core.client
import corral_core.runner.dask_worker
import corral_core.runner.trial
import corral_core.server.app  # noqa: F401
from corral_core.llm import preload

preload()
