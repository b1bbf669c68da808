"""The store as corral-tui 0.1 made it: seven tables, their indexes and the owner columns.

Stores made before the schema was versioned hold exactly this (corral_core.store.schema adopts
them: it adds the owner columns they may lack and stamps them with this revision).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _ts(name: str, nullable: bool = True) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "benchmark",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("spec_name", sa.String(), nullable=False),
        sa.Column("spec_digest", sa.String(), nullable=False),
        sa.Column("spec_yaml", sa.Text(), nullable=True),
        sa.Column("suites_json", sa.Text(), nullable=True),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("model", sa.String(), nullable=False),
        sa.Column("arms_json", sa.Text(), nullable=True),
        sa.Column("trials_per_task", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("headline_score", sa.Float(), nullable=True),
        sa.Column("attempt_status", sa.String(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("finished_at"),
        sa.Column("metrics_json", sa.Text(), nullable=True),
        sa.Column("owner_pid", sa.Integer(), nullable=True),
        sa.Column("owner_host", sa.String(), nullable=True),
        _ts("heartbeat_at"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_benchmark_created_at", "benchmark", ["created_at", "id"])
    op.create_index("ix_benchmark_digest_created", "benchmark", ["spec_digest", "created_at"])

    op.create_table(
        "trial",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("benchmark_id", sa.String(), nullable=True),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("trial_index", sa.Integer(), nullable=False),
        sa.Column("episode_id", sa.String(), nullable=True),
        sa.Column("agent", sa.String(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        sa.Column("verbosity", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("surrendered", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("tool_duration", sa.Float(), nullable=True),
        sa.Column("iterations", sa.Integer(), nullable=False),
        sa.Column("assisted", sa.Boolean(), nullable=False),
        _ts("started_at"),
        _ts("finished_at"),
        sa.ForeignKeyConstraint(["benchmark_id"], ["benchmark.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("benchmark_id", "arm", "task_id", "trial_index", name="uq_trial_key"),
    )
    op.create_index("ix_trial_benchmark_started", "trial", ["benchmark_id", "started_at", "id"])
    op.create_index("ix_trial_benchmark_status", "trial", ["benchmark_id", "status"])
    op.create_index("ix_trial_benchmark_task", "trial", ["benchmark_id", "task_id"])

    op.create_table(
        "message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.String(), nullable=True),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("name", sa.String(), nullable=True),
        sa.Column("tool_calls_json", sa.Text(), nullable=True),
        sa.Column("tool_call_id", sa.String(), nullable=True),
        _ts("ts", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_message_trial_index", "message", ["trial_id", "index"])

    op.create_table(
        "tool_call",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.String(), nullable=True),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("tool_name", sa.String(), nullable=False),
        sa.Column("arguments_json", sa.Text(), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("risk", sa.String(), nullable=True),
        sa.Column("approval", sa.String(), nullable=True),
        sa.Column("render", sa.String(), nullable=True),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("iteration", sa.Integer(), nullable=True),
        _ts("ts", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_tool_call_trial_seq", "tool_call", ["trial_id", "seq"])

    op.create_table(
        "hook_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("point", sa.String(), nullable=True),
        sa.Column("name", sa.String(), nullable=True),
        sa.Column("iteration", sa.Integer(), nullable=True),
        sa.Column("data_json", sa.Text(), nullable=True),
        _ts("ts", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_hook_event_trial_ts", "hook_event", ["trial_id", "ts"])

    op.create_table(
        "llm_call",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trial_id", sa.String(), nullable=True),
        sa.Column("benchmark_id", sa.String(), nullable=True),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("trial_index", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(), nullable=True),
        sa.Column("request_messages_n", sa.Integer(), nullable=True),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("tool_calls_json", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("total_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("model", sa.String(), nullable=True),
        _ts("ts", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_llm_call_trial", "llm_call", ["trial_id"])
    op.create_index(
        "ix_llm_call_replay_key", "llm_call", ["benchmark_id", "arm", "task_id", "trial_index", "role", "turn"]
    )

    op.create_table(
        "chain_output",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.String(), nullable=True),
        sa.Column("episode_id", sa.String(), nullable=True),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("trial_id", sa.String(), nullable=True),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        _ts("ts", nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_chain_output_benchmark_episode", "chain_output", ["benchmark_id", "episode_id"])


def downgrade() -> None:
    for table in ("chain_output", "llm_call", "hook_event", "tool_call", "message", "trial", "benchmark"):
        op.drop_table(table)
