"""The embedded store: SQLModel tables, `make_engine`, the writer thread and the query facade.

Tables (tables.py), plain domain objects (models.py) and the converters between them (convert.py)
are kept apart; callers use `StoreWriter` to record events and `Repository` to read.
"""

from corral_core.constants import default_db_path
from corral_core.store.database import init_db, make_engine
from corral_core.store.models import (
    ArmInfo,
    BenchmarkInfo,
    BenchmarkPage,
    ChainOutputInfo,
    LLMCallInfo,
    TimelineEntry,
    TrialInfo,
    TrialPage,
)
from corral_core.store.ownership import Owner
from corral_core.store.replay import StoreReplaySource
from corral_core.store.repository import Repository, compute_spec_digest, new_benchmark_id
from corral_core.store.writer import StoreWriter

__all__ = [
    "ArmInfo",
    "BenchmarkInfo",
    "BenchmarkPage",
    "ChainOutputInfo",
    "LLMCallInfo",
    "Owner",
    "Repository",
    "StoreReplaySource",
    "StoreWriter",
    "TimelineEntry",
    "TrialInfo",
    "TrialPage",
    "compute_spec_digest",
    "default_db_path",
    "init_db",
    "make_engine",
    "new_benchmark_id",
]
