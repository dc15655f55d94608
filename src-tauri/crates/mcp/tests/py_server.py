"""An MCP server built on the official Python SDK (`mcp` 1.x, FastMCP), for the client tests.

Usage: python py_server.py stdio | streamable-http | sse   (HTTP port from $PORT)
"""

import asyncio
import os
import sys
import time

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


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "woke up"


@server.tool()
def huge(megabytes: int) -> str:
    """Answer with MEGABYTES of text between BEGIN and THE END."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmn\n"
    return "BEGIN\n" + line * (megabytes * 1024 * 1024 // len(line)) + "THE END"


@server.tool()
async def flood(count: int, ctx: Context) -> str:
    """Send COUNT progress notifications, COUNT log messages and COUNT/100 tool-list changes, then answer."""
    for i in range(count):
        await ctx.report_progress(i + 1, count, f"flood {i + 1}")
        await ctx.info(f"log line {i + 1}")
        if i % 100 == 0:
            await ctx.session.send_tool_list_changed()
    return f"flooded {count}"


@server.tool()
def garbage() -> str:
    """Write lines that are not MCP messages to stdout, then answer."""
    sys.stdout.write("this is not json\n{\"jsonrpc\": \"2.0\", \"broken\n\x00\xff binary\n")
    sys.stdout.flush()
    return "answered after garbage"


if __name__ == "__main__":
    # A server slow to start (a package being fetched, a large index loaded) answers initialize late.
    time.sleep(float(os.environ.get("SLOW_START", "0")))
    server.run(transport=sys.argv[1] if len(sys.argv) > 1 else "stdio")
