"""Tools: Tool and @tool (docstring + type hints -> JSON schema), risk levels, verbosity, guides."""

from corral_core.tools.base import RiskLevel, Tool
from corral_core.tools.decorator import tool
from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.guides import tools_guide, tools_openai
from corral_core.tools.verbosity import ToolVerbosity, parse_verbosity

__all__ = [
    "RiskLevel",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolVerbosity",
    "parse_verbosity",
    "tool",
    "tools_guide",
    "tools_openai",
]
