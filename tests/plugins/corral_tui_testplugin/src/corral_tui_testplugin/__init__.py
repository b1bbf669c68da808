"""One kind of each family registered from outside corral-tui: a scorer (`contains`), a breakpoint
kind (`args:REGEX`), an agent (`terse`), a tool source (`echo`) and an export format (`lines`)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from corral_core.agents import ReActAgent, agent_kind
from corral_core.agents.breakpoints import BREAKPOINTS, BreakpointWatch, Condition
from corral_core.env.scoring import SCORERS, Scorer, ScoringContext
from corral_core.exporters import EXPORTERS, Exporter, ExportJob
from corral_core.tools import Tool, tool
from corral_core.tools.factory import TOOL_SOURCES


@SCORERS.kind("contains", doc="1.0 when the answer contains `text` (default: the task's answer).",
              options={"text": "what the answer must contain", "ignore_case": "compare regardless of case"})
def contains(spec: Mapping[str, Any], expected: Any, resolve_python: Callable[[str], Any]) -> Scorer:
    wanted = str(spec.get("text", expected))
    fold = bool(spec.get("ignore_case", False))

    def score(answer: str | None, context: ScoringContext) -> tuple[float, str]:
        got = answer or ""
        found = wanted.casefold() in got.casefold() if fold else wanted in got
        return (1.0, f"contains {wanted!r}") if found else (0.0, f"does not contain {wanted!r}")

    return score


@BREAKPOINTS.kind("args", syntax="args:REGEX", doc="right before a tool call whose JSON arguments REGEX matches")
class ArgsMatch(Condition):
    def parse(self, value: str) -> Any:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the regex does not compile ({exc})") from None
        return value

    def before_tool(self, watch: BreakpointWatch, agent: Any, value: Any, name: str,
                    arguments: dict[str, Any]) -> str | None:
        text = json.dumps(arguments, sort_keys=True)
        return f"{name} arguments {text} match /{value}/" if re.search(str(value), text) else None


@agent_kind("terse", doc="a ReAct agent told to answer in as few words as it can")
class TerseAgent(ReActAgent):
    def __init__(self, *args: Any, word_limit: int = 5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.word_limit = word_limit


@TOOL_SOURCES.kind("echo", doc="a tool that says its text back", options={"prefix": "put before the text"})
def echo_source(decl: dict[str, Any], name: str, base: Path, allow_private: bool) -> Tool:
    prefix = str(decl.get("prefix", ""))

    def echo(text: str) -> str:
        """Say the text back.

        Args:
            text: what to say back
        """
        return prefix + text

    made: Tool = tool(echo, name=name)
    return made


@EXPORTERS.kind("lines", doc="one line per trial: task, status and score")
class LinesExporter(Exporter):
    def write(self, job: ExportJob) -> list[str]:
        from corral_core.runner.results import stored_trial_values

        rows = stored_trial_values(job.repository, job.info.id, job.pass_threshold, ("task_id", "status", "score"))
        text = "".join(f"{task} {status} {score}\n" for task, status, score in rows)
        if job.output == "-":
            sys.stdout.write(text)
        else:
            Path(job.output).write_text(text, encoding="utf-8")
        return []
