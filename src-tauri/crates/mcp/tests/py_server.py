"""An MCP server built on the official Python SDK (`mcp` 1.x, FastMCP), for the client tests.

Usage: python py_server.py stdio | streamable-http | sse   (HTTP port from $PORT)
"""

import asyncio
import os
import sys

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("codewright-py-test", host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress STEPS times, then answer."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await asyncio.sleep(0.05)
    return f"{steps} steps done"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool called NAME and tell the client that the tools changed."""

    def extra() -> str:
        return f"{name} ran"

    server.add_tool(extra, name=name, description="A tool added while the server runs.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run(transport=sys.argv[1] if len(sys.argv) > 1 else "stdio")
