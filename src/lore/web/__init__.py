"""The web face (`lore serve`): a REST API under /api/v1 and a server-rendered dashboard.

Like the CLI and the MCP server it parses input, calls the facade (:class:`lore.api.Lore`)
and renders the result; fastapi, uvicorn and jinja2 are imported only here (the ``server``
extra). docs/server.md describes running it, the tokens, the API and the pages.
"""

from __future__ import annotations

from lore.web.app import create_app, serve

__all__ = ["create_app", "serve"]
