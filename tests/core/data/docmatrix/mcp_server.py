"""A stdio MCP server for the documentation matrix: one tool without tags (its argument has a schema
with a range and examples), one whose description carries Corral's tags."""

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("docmatrix")


@server.tool()
def mcp_plain(stars: Annotated[int, Field(ge=1, le=5, examples=[4], description="Rating MK_mcpplain_brief_stars. "
                                          "Whole stars MK_mcpplain_detailed_stars.")]) -> str:
    """Rate a note MK_mcpplain_brief. The rating is kept MK_mcpplain_detailed."""
    return str(stars)


@server.tool()
def mcp_tagged(title: str) -> str:
    """[BRIEF] Look a note up MK_mcptagged_brief. [/BRIEF] [DETAILED] MK_mcptagged_detailed [/DETAILED]
    [SYNTACTICAL] MK_mcptagged_syntactical [/SYNTACTICAL] [EXAMPLES] MK_mcptagged_examples [/EXAMPLES]"""
    return title


if __name__ == "__main__":
    server.run()
