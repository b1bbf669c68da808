"""The first frame does not wait for the heavy engine modules: they load in a worker after mount."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.tui.helpers import ROOT

HEAVY = ("fastapi", "uvicorn", "sqlalchemy", "sqlmodel", "litellm", "httpx")
# the engine's packages the first frame draws nothing from (each imports its whole package: ~0.1 s together),
# OpenTelemetry's API (the tracing check needs it only when something set a provider) and Pygments
ENGINE = ("corral_core.agents", "corral_core.env", "corral_core.llm", "corral_core.metrics", "corral_core.spec",
          "corral_core.runner", "corral_core.store", "corral_core.server", "corral_tui.analysis", "opentelemetry",
          "pygments", "yaml")
# loaded after the first frame too (the boot worker, a run, the statistics)
AFTER_FIRST_FRAME = (*HEAVY, *ENGINE, "openai", "numpy", "dask", "distributed", "mcp", "plotext", "textual_plotext")
# not before "Ready." either (the boot worker's store and servers do without them)
BOOT_NEEDS_NOT = ("alembic", "httpx", "httpcore", "ddgs", "litellm", "openai", "numpy", "dask", "mcp", "fastapi")


def test_building_the_app_imports_no_heavy_module(tmp_path) -> None:
    code = ("import json, sys; from corral_tui.app import create_app; from tests.tui.stable import test_config; "
            f"create_app(test_config(db_url={str(tmp_path / 'c.db')!r})); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_the_command_line_path_to_the_first_frame_imports_no_heavy_module(tmp_path) -> None:
    """What `corral-tui` runs before the workbench's first frame: the environment, the options, the config
    built from them (the default store path once pulled SQLAlchemy in), the tracing check and the app."""
    code = ("import json, sys; from corral_tui import cli; from corral_tui.app import create_app; "
            "from corral_tui.config import config_from_args; from corral_core.tracing import check; "
            "cli._prepare_environment(); check(); "
            f"create_app(config_from_args(cli.parse_options(['--db', {str(tmp_path / 'c.db')!r}]))); "
            "create_app(config_from_args(cli.parse_options([]))); "
            f"print(json.dumps([m for m in {AFTER_FIRST_FRAME!r} "
            "if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "XDG_DATA_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


BOOT = """
import json, sys
from corral_tui.services import WorkbenchServices
from tests.tui.stable import test_config

services = WorkbenchServices.build(test_config(db_url=DB))
try:
    services.load_suites()
    services.open_store()
    services.start()
    print(json.dumps([m for m in MODULES if m in sys.modules]))
finally:
    services.close()
"""


def test_the_boot_before_ready_imports_only_what_the_servers_and_the_store_need(tmp_path) -> None:
    """What the boot worker does before "Ready." on a new store (the sample suites, the store, the
    servers) leaves out Alembic (a new store needs no migration), httpx (fetch_url imports it at its
    first request), ddgs (the sample suite's search backend is checked without it), FastAPI (each
    server's app is built on its first request, or after "Ready.") and litellm and the OpenAI client
    (loaded after "Ready.")."""
    code = f"MODULES = {BOOT_NEEDS_NOT!r}\nDB = {str(tmp_path / 'c.db')!r}\n{BOOT}"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


SEQUENCE = """
import asyncio, json, sys, threading
from textual.app import App
import corral_tui.services as services
from corral_tui.app import create_app
from tests.tui.helpers import wait_for
from tests.tui.stable import test_config

seen = {}
original = App._display


def display(self, screen, renderable):
    if renderable is not None:
        if "first" not in seen:
            seen["first"] = {"boot started": any(worker.group == "boot" for worker in self.workers),
                             "modules": [m for m in MODULES if m in sys.modules]}
        if self.ready and "ready painted" not in seen:
            seen["ready painted"] = True
    return original(self, screen, renderable)


warmed = threading.Event()


def warm_up(first=None):
    seen["warm-up after ready painted"] = "ready painted" in seen
    warmed.set()


App._display = display
services.warm_up = warm_up


async def main():
    async with create_app(test_config(db_url=DB)).run_test() as pilot:
        await wait_for(pilot, warmed.is_set, "the litellm warm-up")


asyncio.run(main())
print(json.dumps(seen))
"""


def test_the_boot_starts_after_the_first_frame_and_litellm_loads_after_ready_is_painted(tmp_path) -> None:
    """The first screen is composed and painted before the boot worker imports the store and the
    servers (started at mount, its imports took the GIL from the painting), and litellm's multi-second
    import starts only once "Ready." is on screen (it started before, and "Ready." waited for the GIL)."""
    code = f"MODULES = {AFTER_FIRST_FRAME!r}\nDB = {str(tmp_path / 'c.db')!r}\n{SEQUENCE}"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["first"] == {"boot started": False, "modules": []}
    assert seen["warm-up after ready painted"] is True
