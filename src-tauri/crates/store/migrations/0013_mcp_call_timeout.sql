-- How long a call to this MCP server may go without an answer (or a progress notice) before it
-- fails as timed out, in seconds; NULL is the default (two minutes). A slow server (a browser, a
-- build) needs longer; one that should answer at once can be given less.

ALTER TABLE mcp_servers ADD COLUMN call_timeout_s INTEGER;
