"""benchmark.owner_token: the fencing token of a running benchmark's current owner.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("benchmark", sa.Column("owner_token", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("benchmark") as batch:
        batch.drop_column("owner_token")
