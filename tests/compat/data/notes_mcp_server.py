"""A small stdio MCP server (official SDK) whose tools a suite brings in with `type: mcp`."""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes")
NOTES: dict[str, str] = {}


@server.tool()
def add_note(title: str, text: str) -> str:
    """Store a note under a title (replacing one of the same title)."""
    NOTES[title] = text
    return f"stored {title!r}"


@server.tool()
def read_note(title: str) -> str:
    """Read the note stored under a title."""
    if title not in NOTES:
        raise ToolError(f"no note titled {title!r}")  # its text reaches the client
    return NOTES[title]


@server.tool()
def delete_note(title: str) -> str:
    """Delete the note stored under a title."""
    NOTES.pop(title, None)
    return f"deleted {title!r}"


@server.tool()
def count_notes() -> int:
    """How many notes are stored."""
    return len(NOTES)


if __name__ == "__main__":
    server.run()
