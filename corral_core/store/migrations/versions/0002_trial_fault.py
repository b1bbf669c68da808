"""trial.fault: whose fault an errored trial was (metrics.records.FAULTS).

Stores from before versioning may already have it (the unversioned releases added it in place):
then there is nothing to do.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("trial")}
    if "fault" not in columns:
        op.add_column("trial", sa.Column("fault", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("trial") as batch:
        batch.drop_column("fault")
