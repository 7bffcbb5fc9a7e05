"""Serving the viewer's page on 127.0.0.1 (loopback only: run data never leaves the machine)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["serve"]


def serve(page: bytes, port: int = 0) -> ThreadingHTTPServer:
    """A server (not yet serving: call ``serve_forever``) that answers ``/`` with ``page`` and 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the http.server protocol names it
            if self.path.split("?")[0] not in ("/", "/index.html"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the console is the user's
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)
