"""A site that streams downloads, for the tests of limits enforced while bytes arrive.

``/sized?mib=N`` is an attachment of N MiB, ``/endless`` (and ``/endless-stray``) one that never ends; both are sent at
``RATE`` (a fast real network's pace, not loopback's: there Chromium writes hundreds of MiB in the
tenth of a second a busy machine takes to relay the download's start to the worker), and the server counts, per path, the bytes it managed to send and
whether the browser hung up (``StreamSite.ended``). ``/stray`` is a page whose own script starts
the endless ``/endless-stray`` download (no ``download`` step asks for it) and then shows ``#ended`` once the server
saw that stream stop; ``/emoji`` is an attachment whose name is 200 emoji.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar
from urllib.parse import parse_qs, quote, urlsplit

from tests.support.http import serve_http

MIB = 1024 * 1024
CHUNK = b"x" * 65536
#: Bytes a second each stream is sent at: a whole 192-MiB file takes 6 s, the limit's 8 MiB 0.25 s;
#: the tests' slack of 64 MiB then allows 2 s between a download's start and its stop.
RATE = 32 * MIB
EMOJI_NAME = "\U0001f600" * 200 + ".txt"

INDEX = """<!doctype html><html><body>
<a id="sized" href="/sized?mib={mib}">a big file</a>
<a id="endless" href="/endless">an endless stream</a>
<a id="emoji" href="/emoji">a file with a long name</a>
</body></html>"""
STRAY = """<!doctype html><html><body>
<a id="go" href="/endless-stray" download>stream</a>
<script>
  document.getElementById("go").click();
  const check = async () => {
    const state = await (await fetch("/status")).json();
    if (state.ended.includes("/endless-stray")) {
      const done = document.createElement("p"); done.id = "ended"; document.body.append(done);
    } else { setTimeout(check, 50); }
  };
  check();
</script></body></html>"""


class StreamSite(BaseHTTPRequestHandler):
    sent: ClassVar[dict[str, int]] = {}
    ended: ClassVar[list[str]] = []
    changed = threading.Condition()

    def _page(self, body: str, content_type: str = "text/html; charset=utf-8") -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/":
            self._page(INDEX.format(mib=parse_qs(parts.query).get("mib", ["192"])[0]))
        elif parts.path == "/stray":
            self._page(STRAY)
        elif parts.path == "/status":
            with self.changed:
                self._page(json.dumps({"ended": list(self.ended)}), "application/json")
        elif parts.path == "/emoji":
            self._attachment("/emoji", 4, name=EMOJI_NAME)
        elif parts.path == "/sized":
            self._attachment(parts.path, int(parse_qs(parts.query).get("mib", ["0"])[0]) * MIB)
        elif parts.path.startswith("/endless"):  # /endless, and /endless-stray for the stray page
            self._attachment(parts.path, None)
        else:
            self.send_error(404)

    def _attachment(self, path: str, size: int | None, name: str = "stream.bin") -> None:
        """``size`` bytes (None: forever), at ``RATE``; counted as they go."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(name)}")
        if size is not None:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        left, sent, began = size, 0, time.monotonic()
        try:
            while left is None or left > 0:
                chunk = CHUNK if left is None or left >= len(CHUNK) else CHUNK[:left]
                self.wfile.write(chunk)
                sent += len(chunk)
                ahead = sent / RATE - (time.monotonic() - began)
                if ahead > 0:  # a paced link, not a wait on a condition
                    time.sleep(ahead)
                with self.changed:
                    self.sent[path] = self.sent.get(path, 0) + len(chunk)
                left = None if left is None else left - len(chunk)
        except OSError:
            pass  # the browser hung up (the download was cancelled)
        finally:
            with self.changed:
                self.ended.append(path)
                self.changed.notify_all()

    def log_message(self, *_args: object) -> None:
        return None


def wait_ended(path: str, timeout_s: float = 30.0) -> bool:
    """Whether the server saw a stream of ``path`` end within ``timeout_s``."""
    with StreamSite.changed:
        return StreamSite.changed.wait_for(lambda: path in StreamSite.ended, timeout_s)


def reset() -> None:
    with StreamSite.changed:
        StreamSite.sent.clear()
        StreamSite.ended.clear()


def serve_stream_site() -> Iterator[str]:
    """The site's base URL while it is served (a test module's fixture yields from it)."""
    with serve_http(StreamSite) as address:
        yield f"http://{address}"
