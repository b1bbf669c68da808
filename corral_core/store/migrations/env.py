"""Alembic's entry point for the store's migrations.

corral-tui runs it itself (corral_core.store.schema), passing the open connection in
``config.attributes["connection"]``. Developers run Alembic's command line from the repository root
against a database of their choice, e.g. to write a new revision after changing tables.py:

    alembic -x db=/tmp/dev.db upgrade head
    alembic -x db=/tmp/dev.db revision --autogenerate -m "what changed"
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from corral_core.store.schema import VERSION_TABLE
from corral_core.store.tables import metadata


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # SQLite cannot ALTER most things: autogenerate writes batch operations
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


given = context.config.attributes.get("connection")
if given is not None:
    run(given)
else:
    from corral_core.store.database import make_engine

    db = context.get_x_argument(as_dictionary=True).get("db")
    if not db:
        raise SystemExit("pass the database to migrate: alembic -x db=PATH_OR_URL ...")
    engine = make_engine(db)
    try:
        with engine.connect() as connection:
            run(connection)
            connection.commit()
    finally:
        engine.dispose()
