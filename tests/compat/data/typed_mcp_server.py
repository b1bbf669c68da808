"""A stdio MCP server (official SDK) whose tools have JSON-schema constraints our own type checks do
not cover: a `$ref` to a model in `$defs`, minimum/maximum, a pattern. `calls` counts the calls that
reached it; `picture` answers with an image block."""

from typing import Annotated

from mcp.server.mcpserver import Image, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("typed")
CALLS = {"count": 0}
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


class Note(BaseModel):
    title: str = Field(description="The note's title.")
    body: str = Field(default="", description="The text of the note.")


@server.tool()
def file_note(note: Note) -> str:
    """File a note."""
    CALLS["count"] += 1
    return f"filed {note.title!r}"


@server.tool()
def rate(stars: Annotated[int, Field(ge=1, le=5, description="From 1 to 5.")]) -> str:
    """Rate the service."""
    CALLS["count"] += 1
    return f"rated {stars}"


@server.tool()
def tag(code: Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="Three capital letters.")]) -> str:
    """Tag a sample with a code."""
    CALLS["count"] += 1
    return f"tagged {code}"


@server.tool()
def calls() -> int:
    """How many calls of the other tools reached this server."""
    return CALLS["count"]


@server.tool()
def picture() -> Image:
    """A one-pixel picture."""
    return Image(data=PNG, format="png")


if __name__ == "__main__":
    server.run()
