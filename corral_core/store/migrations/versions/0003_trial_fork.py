"""trial.parent_trial_id and trial.fork_iteration: a fork's parent trial and the iteration it ran live from.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("trial", sa.Column("parent_trial_id", sa.String(), nullable=True))
    op.add_column("trial", sa.Column("fork_iteration", sa.Integer(), nullable=True))
    op.create_index("ix_trial_parent", "trial", ["parent_trial_id"])


def downgrade() -> None:
    op.drop_index("ix_trial_parent", table_name="trial")
    with op.batch_alter_table("trial") as batch:
        batch.drop_column("fork_iteration")
        batch.drop_column("parent_trial_id")
