"""The front doors: how people and programs reach the service.

The command line (``cli``, with its rich renderings in ``cli_output`` and the installation
checks of ``docfinder doctor`` in ``doctor``), the HTTP API (``http_api`` and the generated
``openapi`` document), the MCP server (``mcp_server``, mounted over HTTP through ``asgi_mount``) and the
mounting of the Slack and Teams bots (``chat_bots``). ``request_models`` are the strict
requests that REST and MCP both read; ``responses`` is the one JSON shape of an answer and a
search that every door returns; ``auth`` turns API keys into callers;
``launch`` assembles the HTTP server from the doors. A door module never imports another
door: only ``launch`` (and the CLI, which starts them) composes them.
"""
