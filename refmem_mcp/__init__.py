"""refmem as an MCP server (`refmem mcp`): the memory tool, and OpenClaw's `memory_get` and `memory_search` where
asked, over any store, on stdio or streamable HTTP.

A package of its own beside `refmem/` because it imports the MCP SDK (the `mcp` extra), and `refmem/` imports
only the standard library (D-MCP-PACKAGE). `refmem/mcp_cli.py` parses the command line with the standard library
and imports `refmem_mcp.server` only when `refmem mcp` runs; without the SDK it says which extra to install.
"""
