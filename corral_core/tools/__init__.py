"""Tools: Tool and @tool (docstring + type hints -> JSON schema), risk levels, verbosity, guides."""

from corral_core.tools.arguments import ToolArgument
from corral_core.tools.base import RiskLevel, Tool
from corral_core.tools.decorator import FunctionTool, tool
from corral_core.tools.errors import ToolArgumentError, ToolDefinitionError, ToolExecutionError
from corral_core.tools.guides import tools_guide, tools_listing, tools_openai
from corral_core.tools.verbosity import DocStyle, ToolVerbosity, parse_style, parse_verbosity

__all__ = [
    "DocStyle",
    "FunctionTool",
    "RiskLevel",
    "Tool",
    "ToolArgument",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolVerbosity",
    "parse_style",
    "parse_verbosity",
    "tool",
    "tools_guide",
    "tools_listing",
    "tools_openai",
]
