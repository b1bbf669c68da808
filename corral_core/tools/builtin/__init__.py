"""Builtin tools: calculator, datetime, web_search, fetch_url, and the http / cli tool makers.

Each constructor returns a plain `Tool`; suite YAML reaches them through
`corral_core.tools.factory.build_tool`.
"""

from corral_core.tools.builtin.calculator import calculator_tool, evaluate_expression
from corral_core.tools.builtin.cli import cli_tool
from corral_core.tools.builtin.clock import datetime_tool
from corral_core.tools.builtin.fetch_url import fetch_url_tool
from corral_core.tools.builtin.http_api import http_tool
from corral_core.tools.builtin.params import ToolDeclarationError
from corral_core.tools.builtin.web_search import (
    DdgsSearchProvider,
    SearchProvider,
    SearchResult,
    web_search_tool,
)

__all__ = [
    "DdgsSearchProvider",
    "SearchProvider",
    "SearchResult",
    "ToolDeclarationError",
    "calculator_tool",
    "cli_tool",
    "datetime_tool",
    "evaluate_expression",
    "fetch_url_tool",
    "http_tool",
    "web_search_tool",
]
