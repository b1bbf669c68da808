"""A command run in-process (tests/inprocess.py) leaves the environment as it found it, except what a
library sets once per process: CI failed when a `docs` command run in-process was the first to count
tokens (litellm then set TIKTOKEN_CACHE_DIR, the restore removed it, and every later count in that worker
tried to download tiktoken's files and printed '-')."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os
from tests.inprocess import run_cli
os.environ.pop("TIKTOKEN_CACHE_DIR", None)
os.environ["CORRAL_PROBE_LEFT"] = "1"
before = dict(os.environ)
done = run_cli("docs", "sample_tasks/samplemath.yaml", "--level", "minimal", env={**os.environ, "CORRAL_PROBE": "x"})
from corral_core.docsize import count_tokens
print(json.dumps({"code": done.returncode, "cache": os.environ.get("TIKTOKEN_CACHE_DIR"),
                  "leaked": os.environ.get("CORRAL_PROBE"), "kept": os.environ.get("CORRAL_PROBE_LEFT"),
                  "count": count_tokens("hello world", "gpt-4o")}))
"""


def test_a_first_token_count_in_process_leaves_the_tokenizer_cache_set() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    assert seen["cache"] and Path(seen["cache"]).is_dir()  # litellm's bundled tokenizers, still pointed at
    assert seen["count"] == 2
    assert seen["leaked"] is None and seen["kept"] == "1"  # the command's own environment is still undone
