"""The first frame does not wait for the heavy engine modules: they load in a worker after mount."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.tui.helpers import ROOT

HEAVY = ("fastapi", "uvicorn", "sqlalchemy", "sqlmodel", "litellm", "httpx")


def test_building_the_app_imports_no_heavy_module(tmp_path) -> None:
    code = ("import json, sys; from corral_tui.app import create_app; from tests.tui.stable import test_config; "
            f"create_app(test_config(db_url={str(tmp_path / 'c.db')!r})); "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
