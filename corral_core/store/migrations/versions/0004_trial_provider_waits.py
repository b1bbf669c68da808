"""trial.llm_retries, trial.llm_retry_wait, trial.rate_limit_wait: provider retries and waits per trial.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("trial", sa.Column("llm_retries", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("trial", sa.Column("llm_retry_wait", sa.Float(), nullable=False, server_default="0"))
    op.add_column("trial", sa.Column("rate_limit_wait", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("trial") as batch:
        batch.drop_column("rate_limit_wait")
        batch.drop_column("llm_retry_wait")
        batch.drop_column("llm_retries")
