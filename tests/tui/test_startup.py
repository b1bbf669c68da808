"""The first frame does not wait for the heavy engine modules: they load in a worker after mount."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.tui.helpers import ROOT

HEAVY = ("fastapi", "uvicorn", "sqlalchemy", "sqlmodel", "litellm", "httpx")
# loaded after the first frame too (the boot worker, a run, the statistics)
AFTER_FIRST_FRAME = (*HEAVY, "openai", "numpy", "dask", "distributed", "mcp", "plotext", "textual_plotext")


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
