"""corral-tui engine: tools, environments, server, agents, runner, store. Never imports Textual."""

__version__ = "0.1.0"
