"""The process a sandboxed `python` tool runs in: `python -m corral_core.tools.sandbox_child`.

It reads one JSON request on stdin ({"declaration", "base_dir", "arguments"}), builds the tool from
its declaration as the suite loader does, runs it, and writes {"result": text} or {"error": text} as
the last line of stdout (what the tool itself prints goes to stderr, so it cannot forge the answer).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path


def main() -> int:
    request = json.loads(sys.stdin.read())
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the tool's own prints (and its children's) go to stderr
    sys.stdout = sys.stderr
    from corral_core.tools.factory import build_tool

    try:
        with contextlib.redirect_stdout(sys.stderr):
            tool = build_tool(dict(request["declaration"], sandbox=None), base_dir=Path(request["base_dir"]))
            result = tool.execute(**request["arguments"])
        reply = {"result": result if isinstance(result, str) else str(result)}
    except Exception as exc:  # the tool's own failure: reported to the agent, like an unsandboxed one
        reply = {"error": f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)}
    answer.write("\n" + json.dumps(reply) + "\n")
    answer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
