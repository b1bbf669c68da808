"""Corral's building blocks under the names Corral users know, in one module.

A Corral environment module runs here with only its imports changed:

```python
# before                                              # after
from corral.backend.env import Environment            from corral_core.corral import (
from corral.backend.schema import ToolArgument            Environment, Tool, ToolArgument, tool,
from corral.backend.tool import Tool, tool                create_benchmark_server, run_server,
from corral.backend.server import (                   )
    create_benchmark_server, run_server)
```

`Tool` subclasses pass `ToolArgument` lists to `__init__` and override `execute(**kwargs)`;
`@tool` / `@tool(hidden_args=[...])` make a `FunctionTool` from a documented function;
`Environment` subclasses have their own constructor, `get_task_prompt()` and `score()`, and may
set `self.hidden_args` (values for the tools' hidden arguments); `TaskGroup`, `TaskDefinition`
and `ChainedEnvironment` chain tasks; `create_benchmark_server(environments)` and
`run_server(app, port=...)` serve them. `CorralRouter` is the client.
"""

from corral_core.client import CorralRouter, TaskTrialResult, ToolResponse
from corral_core.env import Environment, TaskState, ToolCall, ToolStatus
from corral_core.env.chains import TaskDefinition, TaskGroup
from corral_core.env.groups import ChainedEnvironment
from corral_core.server.corral_api import create_benchmark_server, run_server
from corral_core.tools import FunctionTool, RiskLevel, Tool, ToolArgument, ToolVerbosity, tool

ToolCallStatus = ToolStatus  # Corral's name for a tool call's status

__all__ = [
    "ChainedEnvironment",
    "CorralRouter",
    "Environment",
    "FunctionTool",
    "RiskLevel",
    "TaskDefinition",
    "TaskGroup",
    "TaskState",
    "TaskTrialResult",
    "Tool",
    "ToolArgument",
    "ToolCall",
    "ToolCallStatus",
    "ToolResponse",
    "ToolVerbosity",
    "create_benchmark_server",
    "run_server",
    "tool",
]
