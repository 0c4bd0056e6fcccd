"""The pages the secret tests plant their secret through: a form, an echo page, Basic auth."""

from __future__ import annotations

import base64
import html
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote

from tests.support.http import serve_http

BASIC_USER = "user"
# ``/``, ``@``, ``?`` and ``#`` would end a URL's userinfo (the Basic auth path needs it whole);
# the unit tests cover them. A per-run suffix keeps earlier runs' leftovers out of the search.
SECRET = "p&ss~w!rd \"<é>+='" + uuid.uuid4().hex[:6]

TEMPLATE = """
name: {name}
version: 1.0.0
params:
  base: {{type: url, required: true}}
  host: {{type: string, required: true}}
  password: {{type: secret, required: true}}
settings: {{trace: always, human_input: {human}, step_timeout_s: 15, step_retries: 0, run_retries: 0}}
steps:
  - {{action: navigate, url: "${{base}}/token?token=${{password}}"}}
  - {{action: navigate, url: "${{base}}/form"}}
  - {{action: fill, selector: "#p", value: "${{password}}"}}
  - {{action: type, selector: "#t", text: "${{password}}"}}
  - {{action: click, selector: "#go"}}
  - {{action: get, what: text, selector: "#echo", into: echoed}}
  - {{action: navigate, url: "http://{user}:${{password}}@${{host}}/auth"}}
  - {{action: get, what: url, into: where}}
  - {{action: navigate, url: "${{base}}/echo?v=${{password}}"}}
  - {{action: assert, selector: "#not-there", timeout_s: 2, message: "fails on purpose: snapshot and trace"}}
"""


class _Site(BaseHTTPRequestHandler):
    """A form, an echo page (HTML, JSON, console, cookie) and a Basic-auth page."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        data = body.encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _echo(self, value: str) -> None:
        safe_json = json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        self._send(
            200,
            f'<meta charset="utf-8"><p id="echo">{html.escape(value)}</p>'
            f'<input id="again" value="{html.escape(value)}">'
            f"<script>window.v = {safe_json}; console.log('echo', window.v);</script>",
            (("Set-Cookie", f"echo={quote(value)}; Path=/"),),
        )

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/form":
            self._send(
                200,
                '<meta charset="utf-8"><form method="post" action="/post">'
                '<input id="p" name="p" type="password"><input id="t" name="t">'
                '<button id="go">go</button></form>',
            )
        elif path == "/auth":
            expected = "Basic " + base64.b64encode(f"{BASIC_USER}:{SECRET}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, "who are you", (("WWW-Authenticate", 'Basic realm="x"'),))
            else:
                self._send(200, "<p id='authed'>in</p>")
        elif path == "/echo":
            self._echo(parse_qs(query).get("v", [""])[0])
        else:
            self._send(200, "<p>token page</p>")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        self._echo(parse_qs(body).get("p", [""])[0])


@contextmanager
def serve() -> Iterator[str]:
    """``host:port`` of the site, served in a thread."""
    with serve_http(_Site) as address:
        yield address


def params(site: str) -> dict[str, str]:
    return {"base": f"http://{site}", "host": site, "password": SECRET}
