"""A site for the download and upload tests, served on 127.0.0.1: links that download files
(``Content-Disposition: attachment``) and a form whose server echoes what was uploaded.

``/report.csv`` is the CSV the tests download; ``/big.bin`` is ``BIG`` bytes; ``/form`` posts
``multipart/form-data`` to ``/upload``, which answers a page listing each uploaded file's name,
size and sha256 (``<li class=file data-name=… data-size=… data-sha256=…>``).
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

from tests.support.http import serve_http

CSV = b"id,name,amount\n1,Ada,12.50\n2,Grace,7.25\n3,Linus,0.99\n"
CSV_SHA256 = hashlib.sha256(CSV).hexdigest()
BIG = 300_000

INDEX = """<!doctype html><html><body>
<a id="csv" href="/report.csv">the report</a>
<a id="big" href="/big.bin">a big file</a>
<a id="evil" href="/evil">a file with a hostile name</a>
<a id="nothing" href="#">downloads nothing</a>
</body></html>"""
FORM = """<!doctype html><html><body>
<form method="post" action="/upload" enctype="multipart/form-data">
  <input type="file" id="one" name="one">
  <input type="file" id="many" name="many" multiple>
  <button id="send" type="submit">send</button>
</form></body></html>"""


def uploaded(body: bytes, content_type: str) -> list[tuple[str, bytes]]:
    """``(field:filename, bytes)`` of every file in a multipart/form-data body, byte for byte."""
    boundary = re.search(r'boundary="?([^";]+)"?', content_type)
    if boundary is None:
        return []
    found = []
    for part in body.split(b"--" + boundary.group(1).encode())[1:-1]:
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        disposition = head.decode("utf-8", "replace")
        field = re.search(r'; name="([^"]*)"', disposition)
        filename = re.search(r'; filename="([^"]*)"', disposition)
        if field and filename and filename.group(1):  # an empty file input sends filename=""
            found.append((f"{field.group(1)}:{filename.group(1)}", data.removesuffix(b"\r\n")))
    return found


class FileSite(BaseHTTPRequestHandler):
    def _send(self, data: bytes, content_type: str, **headers: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/":
            self._send(INDEX.encode(), "text/html; charset=utf-8")
        elif path == "/form":
            self._send(FORM.encode(), "text/html; charset=utf-8")
        elif path == "/report.csv":
            self._send(CSV, "text/csv", Content_Disposition='attachment; filename="report.csv"')
        elif path == "/big.bin":
            self._send(b"x" * BIG, "application/octet-stream", Content_Disposition='attachment; filename="big.bin"')
        elif path == "/evil":
            self._send(b"evil", "text/plain",  # ../../.bashrc<RIGHT-TO-LEFT OVERRIDE>txt.exe
                       Content_Disposition="attachment; filename*=UTF-8''..%2F..%2F.bashrc%E2%80%AEtxt.exe")
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        files = uploaded(self.rfile.read(length), self.headers.get("Content-Type", ""))
        items = "".join(
            f'<li class="file" data-name="{html.escape(name)}" data-size="{len(data)}" '
            f'data-sha256="{hashlib.sha256(data).hexdigest()}">{html.escape(name)}</li>'
            for name, data in files
        )
        self._send(f"<!doctype html><ul id='files'>{items}</ul>".encode(), "text/html; charset=utf-8")

    def log_message(self, *_args: object) -> None:
        return None


def serve_file_site() -> Iterator[str]:
    """The site's base URL while it is served (a test module's fixture yields from it)."""
    with serve_http(FileSite) as address:
        yield f"http://{address}"


ECHOED = """
  - {action: click, selector: "#send"}
  - {action: wait, selector: "#files", state: attached}
  - action: extract
    selector: "li.file"
    fields: {name: {attr: data-name}, size: {attr: data-size}, sha256: {attr: data-sha256}}
    into: echoed
"""
