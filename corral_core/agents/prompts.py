"""Default prompts of the built-in agents, and the tiny `{{name}}` template filler they use.

Prompts are plain strings with `{{variable}}` placeholders (Corral's Jinja style). An optional section
(examples, surrender instructions) that is empty leaves no trace: no literal "None", no blank gap.
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

SYSTEM_PROMPT = (
    "You are an autonomous agent solving a task in an environment that you can only act on through "
    "the tools it offers. Tool calls can be expensive (measurements, simulations, real services): "
    "avoid unnecessary actions, think before acting, and finish as soon as you have the answer."
)

REACT_USER_PROMPT = """Task Guide:
{{task_guide}}

{{examples}}

Respond in this format to use a tool:
<thought>your reasoning</thought>
<action>tool name</action>
<action_input>the tool arguments as a JSON object</action_input>

Use <action_input>{}</action_input> for a tool without arguments. You will then receive the \
observation and can continue.

When you know the answer, respond with:
<thought>your reasoning</thought>
<final_answer>the answer only</final_answer>

{{surrender_instructions}}

The XML tags must be used exactly as shown, each with its closing tag."""

REACT_SURRENDER = (
    "If the task cannot be solved with the available tools, you may give up deliberately with:\n"
    "<thought>your reasoning</thought>\n<surrender>a brief explanation</surrender>"
)

TOOL_CALLING_USER_PROMPT = """Task:
{{task_prompt}}

{{examples}}

Use the tools provided to solve the task. When you know the answer, reply with a message of the \
form "Final Answer: <the answer only>" and no tool call.

{{surrender_instructions}}"""

TOOL_CALLING_SURRENDER = (
    "If the task cannot be solved with the available tools, you may give up deliberately by calling "
    "the `{{surrender_tool}}` tool, or by replying with exactly \"Final Answer: GIVE UP\"."
)

SURRENDER_REFUSED = ("Surrender is not available in this run; give your best answer as "
                     "\"Final Answer: <answer>\".")

PLANNER_PROMPT = """You are the planner of a two-level agent. An executor agent carries out your plans \
step by step with the tools below; you never call tools yourself.

Task Guide:
{{task_guide}}

{{examples}}

Write a short, numbered plan for the executor. After each plan you will see the answer the \
executor reached. When you are confident of the final answer, reply with "Final Answer: <the \
answer only>" instead of a plan. You have at most {{iterations}} planning turns.

{{surrender_instructions}}"""

PLANNER_SURRENDER = (
    "If the task cannot be solved with the available tools, reply with exactly \"Final Answer: GIVE UP\"."
)

EXECUTOR_TASK = """{{task}}

The planner asks you to carry out this plan:
{{plan}}"""

REFLECTION_PROMPT = """You are reviewing an earlier attempt of an agent at a task, to help its next \
attempt do better.

Task: {{task_id}}
Attempt (trial {{trial}}) scored {{score}} (1.0 is a full solution).

Trajectory of that attempt:
{{trajectory}}

In at most five sentences, state what went wrong or right, and one concrete lesson for the next \
attempt. Reply with the lesson text only."""

LESSONS_HEADER = "=== LESSONS FROM PREVIOUS ATTEMPTS ==="

EXTRACTOR_PROMPT = """You are given a final answer an agent gave for a task, and the conversation \
it came from. Return only the answer itself: no explanation, no "The answer is", no "Answer:". If \
the given answer is empty or incomplete, extract the answer from the conversation.

{{message}}

Answer given: {{answer}}"""


def render(template: str, **values: Any) -> str:
    """Fill `{{name}}` placeholders; empty sections vanish and runs of blank lines collapse.

    A placeholder with no value is a mistake in a user-supplied prompt: the error names it and the
    variables that prompt can use.
    """
    missing = sorted({m.group(1) for m in _PLACEHOLDER.finditer(template)} - set(values))
    if missing:
        raise ValueError(
            f"prompt template uses unknown variable(s) {', '.join(missing)}; "
            f"this prompt can use: {', '.join(sorted(values)) or 'none'}. "
            "Fix the {{...}} placeholders in your prompt."
        )

    def fill(match: re.Match[str]) -> str:
        value = values[match.group(1)]
        return "" if value is None else str(value)

    text = _PLACEHOLDER.sub(fill, template)
    text = re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", text)
    return text.strip()


def format_examples(examples: Any) -> str:
    """Few-shot examples as prompt text; nothing at all when there are none."""
    if not examples:
        return ""
    if isinstance(examples, str):
        return f"Examples:\n{examples.strip()}"
    parts = []
    for example in examples:
        if isinstance(example, dict) and "content" in example:
            parts.append(f"{example.get('role', 'example')}: {example['content']}")
        else:
            parts.append(str(example))
    return "Examples:\n" + "\n\n".join(parts)


def clean_guide(guide: str) -> str:
    """Drop a doubled "Task:" prefix (Corral's guide prepends one to prompts that already have it)."""
    return re.sub(r"^\s*(?:Task:\s*){2,}", "Task: ", guide)
