"""The web page for staff (``/``) and admins (``/admin``): plain HTML, CSS and JavaScript
shipped in the package (``server/doors/web/``), served as they are, with no CDN and no build.

The pages hold no data: every question, answer, conversation and rating goes through the
HTTP API with the API key as a bearer header (kept in the tab's session storage, never in a
URL), so the key's scopes, collections and the API's admission limits apply to the page as
to any client. The Content-Security-Policy allows scripts and styles from this server only,
no inline script, no frames, and connections only back to this server; document text is
always set as text by the script, never parsed as HTML.
"""

from __future__ import annotations

from importlib.resources import files

from aiohttp import web

# Only these files are served, by these names: nothing a client sends becomes a path.
PAGES = {"/": "index.html", "/admin": "admin.html"}
ASSETS = {
    "common.js": "text/javascript",
    "app.js": "text/javascript",
    "admin.js": "text/javascript",
    "page.css": "text/css",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def add_page_routes(app: web.Application) -> None:
    for path, name in PAGES.items():
        app.router.add_get(path, _serving(name, "text/html"))
    for name, content_type in ASSETS.items():
        app.router.add_get(f"/static/{name}", _serving(name, content_type))


def _serving(name: str, content_type: str):
    body = (files("server.doors") / "web" / name).read_bytes()

    async def serve(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type, charset="utf-8", headers=SECURITY_HEADERS)

    return serve
