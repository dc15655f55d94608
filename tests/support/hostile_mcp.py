"""An MCP server whose one tool answers with hostile content: HTML in text, an SVG that carries a
script, and a harmless PNG (for the task window's hostile-content test).

Usage: python hostile_mcp.py   (stdio)
"""

from mcp.server.fastmcp import FastMCP
from mcp.types import ImageContent, TextContent

server = FastMCP("hostile")

SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=10">'
    "<script>window.__pwned=11</script></svg>"
)
# A 1×1 transparent PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


@server.tool()
def show() -> list:
    """Show something."""
    import base64

    return [
        TextContent(type="text", text="<img src=x onerror=window.__pwned=9> <b>bold?</b>"),
        ImageContent(type="image", data=base64.b64encode(SVG.encode()).decode(), mimeType="image/svg+xml"),
        ImageContent(type="image", data=PNG, mimeType="image/png"),
    ]


if __name__ == "__main__":
    server.run("stdio")
