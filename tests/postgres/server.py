"""A throwaway PostgreSQL server for the tests: the binaries of the `pgserver` wheel (a test extra, so
`./dev test` installs it on a fresh machine with nothing but Python and PyPI), started on 127.0.0.1
on a free port with its data in a temporary folder, and removed afterwards.

PostgreSQL refuses to run as root. As root (CI, containers) the server runs as the unprivileged
`nobody`, from a copy of the binaries in the temporary folder (the virtual environment may sit in a
folder only root can enter).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
PORT_ATTEMPTS = 5  # a free port can be taken between our check and the server's bind


class CannotStart(Exception):
    """PostgreSQL cannot run here (the reason says why); the tests that need it are skipped."""


def wheel_binaries() -> Path:
    """The `pginstall` folder of the pgserver wheel (found without importing it)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise CannotStart("the pgserver wheel is not installed (it is a test extra: pip install -e '.[test]')")
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (install / "bin" / "postgres").is_file():
        raise CannotStart(f"the pgserver wheel has no PostgreSQL binaries for this platform ({install})")
    return install


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """`start()` it, hand out databases with `new_database()`, `stop()` it (idempotent)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="corral-pg-"))
        self.port = 0
        self._user: dict[str, Any] = {}
        self._bin = Path()
        self._count = 0
        self._started = False

    # --- life cycle ------------------------------------------------------------------------------

    def start(self) -> PostgresServer:
        try:
            self._bin = self._binaries()
            data = self.root / "data"
            data.mkdir()
            self._own(data)
            self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                      "--locale=C", "--no-sync", "--no-instructions")
            self._start(data)
        except BaseException:
            self.stop()
            raise
        return self

    def _binaries(self) -> Path:
        install = wheel_binaries()
        if os.geteuid() != 0:
            return install / "bin"
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            raise CannotStart("running as root and there is no unprivileged user `nobody` to run PostgreSQL as") \
                from None
        self._user = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
        # Keep the wheel's layout: its binaries find their libraries at $ORIGIN/../../../pgserver.libs.
        copy = self.root / "pkg" / "pginstall"
        for part in ("bin", "lib", "share"):
            shutil.copytree(install / part, copy / part, symlinks=True)
        libs = install.parent.parent / "pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, self.root / "pgserver.libs", symlinks=True)
        self.root.chmod(0o755)
        return copy / "bin"

    def _own(self, path: Path) -> None:
        if self._user:
            os.chown(path, self._user["user"], self._user["group"])

    def _start(self, data: Path) -> None:
        log = self.root / "server.log"
        log.touch()
        self._own(log)
        for _ in range(PORT_ATTEMPTS):
            self.port = free_port()
            options = (f"-h 127.0.0.1 -p {self.port} -k {data} -F -c full_page_writes=off "
                       "-c synchronous_commit=off -c max_connections=200")
            try:
                self._run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", str(START_TIMEOUT), "-o", options,
                          "start")
            except CannotStart:
                if "could not bind" in log.read_text(errors="replace"):
                    continue  # the port was taken meanwhile: another one
                raise
            self._started = True
            return
        raise CannotStart(f"no free port for PostgreSQL after {PORT_ATTEMPTS} attempts")

    def stop(self) -> None:
        if self._started:
            self._started = False
            with contextlib.suppress(CannotStart):
                self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run([str(self._bin / program), *args], capture_output=True, text=True, timeout=120,
                              cwd=self.root, **self._user)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise CannotStart(f"{program} failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}\n{tail}")

    # --- databases ---------------------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "corral") -> str:
        """A new empty database; returns its URL."""
        import psycopg

        self._count += 1
        name = f"{prefix}_{os.getpid()}_{self._count}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
