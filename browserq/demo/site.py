"""An offline demo website, served by the standard library in a daemon thread.

Used by ``browserq demo`` and by the test-suite as its fixture server::

    with DemoSite() as site:          # port 0: a free port is picked
        page.goto(site.url + "/quotes/")
        assert site.hits("/quotes/") == 1

Run it by hand with ``python -m browserq.demo.site [--host H] [--port N]``.

Pages and the selectors tests may rely on:

* ``/`` index linking everything (``#links a``).
* ``/quotes/`` = ``/quotes/page/1/`` .. ``/quotes/page/5/``: 10 ``.quote`` each (``.text``,
  ``.author``, ``.tags a.tag``), ``li.next a`` on pages 1-4 only, ``li.previous a`` on 2-5;
  content is :data:`browserq.demo.quotes.QUOTES`. ``/quotes/tag/T/`` lists one tag. Others 404.
* ``/login``: ``#username``, ``#password``, ``button[type=submit]``; ``demo``/``s3cret-pass`` sets
  cookie ``session`` and 303s to ``/account``; otherwise 200 with ``p.error``. ``/logout``.
* ``/account`` (303 to /login without the cookie): ``h1#welcome`` "Welcome, demo"; contact form
  ``#name``, ``#email``, ``#topic`` (support/sales/other), ``#priority-low|normal|high`` radios,
  ``#subscribe`` checkbox, ``#message`` textarea, ``#send``. POST ``/account/contact`` appends
  the form to ``submissions`` and shows ``#confirmation`` "Thanks, NAME! Ticket #N".
* ``/scroll``: 10 ``.item`` (``.title``, ``.body``, ``data-index``), +10 per scroll to the
  bottom (250 ms "load"), 50 at most, then ``#end`` "No more items".
* ``/widgets`` (title "Widgets"): ``#delayed`` (after 600 ms), ``#hover-target``/``#hover-tip``,
  ``#keys``/``#keylog`` (space-separated ``event.key``), ``#color``, ``#agree``, ``#inc``/
  ``#counter``, ``#status``, ``iframe#frame`` (``/frame``: ``#in-frame``, ``#frame-status``),
  ``shadow-box#shadow-host`` with ``.shadow-text`` and ``.shadow-button`` in an open shadow root,
  ``#to-quotes``.
* ``/account/tickets?ref=R`` (logged in): ``#ticket-found`` when a posted message contains R,
  else ``#no-ticket``; ``li.ticket`` per match.
* ``/slow?ms=N`` (cap 60000, ``#slow``), ``/status/N`` (200..599), ``/flaky?key=K&fail=N``
  (500 for the first N requests of key K, then 200), ``/storage``, ``/console-error``.
* ``/gate?name=K`` answers (``#gate``) only once ``site.open_gate(K)`` is called (or ``reset()``,
  or 60 s pass): a test holds a run mid-way until it has seen what it waits for.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http
import secrets
import socket
import sys
import threading
import time
from collections import Counter
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from browserq.demo import pages
from browserq.demo.quotes import QUOTE_PAGES, QUOTES

#: The only account of the demo site.
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "s3cret-pass"
#: Name of the session cookie set by a successful login.
SESSION_COOKIE = "session"
#: Longest delay /slow accepts, in milliseconds.
SLOW_CAP_MS = 60_000
#: Largest request body the site reads (forms are tiny).
MAX_BODY_BYTES = 1_000_000


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hanging /slow request never blocks stop()
    site: DemoSite

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Browsers abort requests all the time (navigation away, page closed): stay quiet.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "browserq-demo/1.0"
    sys_version = ""
    timeout = 30  # idle keep-alive connections are closed after this many seconds

    # --- plumbing --------------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: no request logging to stderr

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        site = self.server.site
        parts = urlsplit(self.path)
        path = parts.path or "/"
        site._count(path)
        if site.latency_ms > 0:  # tests slow the site down to land faults mid-run
            time.sleep(site.latency_ms / 1000)
        self.query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        self.form: dict[str, str] = {}
        if method == "POST":
            self.form = self._read_form()
        try:
            self._route(method, path)
        except (ConnectionError, TimeoutError):
            raise
        except Exception as exc:
            self._send(500, pages.status_page(500, f"demo site error: {exc!r}"))

    def _read_form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            return {}
        if length > MAX_BODY_BYTES:
            self.close_connection = (
                True  # the unread rest of the body must not be parsed as a request
            )
        body = self.rfile.read(min(length, MAX_BODY_BYTES)).decode("utf-8", "replace")
        return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}

    def _send(
        self,
        status: int,
        body: str = "",
        *,
        content_type: str = "text/html; charset=utf-8",
        headers: list[tuple[str, str]] | None = None,
    ) -> bool:
        """Send a response; always True, so a route can ``return self._send(...)`` to say it answered."""
        data = body.encode("utf-8")
        self.send_response(status)
        for name, value in headers or []:
            self.send_header(name, value)
        self.send_header("Cache-Control", "no-store")  # every visit reaches the server: exact hits
        if status in (204, 304):
            self.end_headers()
            return True
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return True

    def _redirect(self, location: str, headers: list[tuple[str, str]] | None = None) -> bool:
        return self._send(303, "", headers=[("Location", location), *(headers or [])])

    def _session_user(self) -> str | None:
        raw = self.headers.get("Cookie")
        if not raw:
            return None
        try:
            cookie = SimpleCookie(raw)
        except CookieError:
            return None
        morsel = cookie.get(SESSION_COOKIE)
        expected = self.server.site._token(DEMO_USERNAME).encode()
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), expected):
            return DEMO_USERNAME
        return None

    # --- routes ----------------------------------------------------------------------------------

    def _route(self, method: str, path: str) -> None:
        """Answer one request: the first group of routes that knows the path answers it."""
        segments = [s for s in path.split("/") if s]
        for routes in (self._route_quotes, self._route_account, self._route_pages, self._route_tools):
            if routes(method, path, segments):
                return
        self._send(404, pages.not_found_page(path))

    def _route_quotes(self, method: str, path: str, segments: list[str]) -> bool:
        """The index and the quotes pages (what the scrape template reads)."""
        if path == "/":
            return self._send(200, pages.index_page())

        if segments and segments[0] == "quotes":
            if len(segments) == 1:
                return self._send(200, pages.quotes_page(1))
            if len(segments) == 3 and segments[1] == "page" and segments[2].isdigit():
                number = int(segments[2])
                if 1 <= number <= QUOTE_PAGES:
                    return self._send(200, pages.quotes_page(number))
            if (
                len(segments) == 3
                and segments[1] == "tag"
                and any(segments[2] in q.tags for q in QUOTES)
            ):
                return self._send(200, pages.tag_page(segments[2]))
            return self._send(404, pages.not_found_page(path))

        return False

    def _route_account(self, method: str, path: str, segments: list[str]) -> bool:
        """Login, logout and the logged-in pages (what the form template drives)."""
        site = self.server.site
        if path == "/login":
            if method == "GET":
                return self._send(200, pages.login_page())
            username = self.form.get("username", "")
            password = self.form.get("password", "")
            if hmac.compare_digest(
                username.encode(), DEMO_USERNAME.encode()
            ) and hmac.compare_digest(password.encode(), DEMO_PASSWORD.encode()):
                cookie = f"{SESSION_COOKIE}={site._token(username)}; Path=/; HttpOnly; SameSite=Lax"
                return self._redirect("/account", [("Set-Cookie", cookie)])
            return self._send(
                200, pages.login_page("Invalid username or password", username=username)
            )

        if path == "/logout":
            expired = f"{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"
            return self._redirect("/login", [("Set-Cookie", expired)])

        if path == "/account":
            user = self._session_user()
            if user is None:
                return self._redirect("/login")
            return self._send(200, pages.account_page(user))

        if path == "/account/contact":
            user = self._session_user()
            if user is None:
                return self._redirect("/login")
            if method == "GET":
                return self._redirect("/account")
            name = self.form.get("name", "").strip()
            if not name:
                return self._send(200, pages.account_page(user, error="Please enter your name"))
            ticket = site._submit(dict(self.form))
            if site.confirm_delay_ms > 0:  # the side effect happened; its answer is still on the way
                time.sleep(site.confirm_delay_ms / 1000)
            return self._send(200, pages.confirmation_page(name, ticket))

        if path == "/account/tickets":
            if self._session_user() is None:
                return self._redirect("/login")
            ref = self.query.get("ref", "")
            found = [s for s in site.submissions_snapshot() if ref and ref in s.get("message", "")]
            return self._send(200, pages.tickets_page(ref, len(found)))

        return False

    def _route_pages(self, method: str, path: str, segments: list[str]) -> bool:
        """Pages for particular browser behaviours (scrolling, widgets, frames, storage)."""
        if path == "/widgets" and "delayed_ms" in self.query:
            delayed = min(int(self.query["delayed_ms"] or 0), SLOW_CAP_MS)
            return self._send(200, pages.widgets_page(delayed))

        if path == "/sw.js":  # a no-op service worker, for storage-isolation tests
            return self._send(200, "self.addEventListener('fetch', () => {});\n",
                              content_type="text/javascript; charset=utf-8")

        simple = {
            "/scroll": pages.scroll_page,
            "/widgets": pages.widgets_page,
            "/frame": pages.frame_page,
            "/storage": pages.storage_page,
            "/console-error": pages.console_error_page,
        }
        if path in simple:
            return self._send(200, simple[path]())

        return False

    def _route_tools(self, method: str, path: str, segments: list[str]) -> bool:
        """Fault injection for tests: slow answers, any status, failures that pass on retry."""
        site = self.server.site
        if path == "/slow":
            raw = self.query.get("ms", "1000")
            try:
                ms = max(0, min(int(raw), SLOW_CAP_MS))
            except ValueError:
                return self._send(
                    400, pages.status_page(400, f"ms must be an integer, not {raw!r}")
                )
            time.sleep(ms / 1000)
            return self._send(200, pages.slow_page(ms))

        if path == "/gate":
            name = self.query.get("name", "")
            opened = site.gate(name).wait(SLOW_CAP_MS / 1000)
            return self._send(200, pages.document("Gate", f'<h1 id="gate">{"open" if opened else "timed out"}</h1>'))

        if len(segments) == 2 and segments[0] == "status":
            code = int(segments[1]) if segments[1].isdigit() else 0
            if not 200 <= code <= 599:
                return self._send(400, pages.status_page(400, "status must be within 200..599"))
            try:
                reason = http.HTTPStatus(code).phrase
            except ValueError:
                reason = f"Status {code}"
            return self._send(code, pages.status_page(code, reason))

        if path == "/flaky":
            key = self.query.get("key", "default")
            raw = self.query.get("fail", "1")
            try:
                fail = int(raw)
            except ValueError:
                return self._send(
                    400, pages.status_page(400, f"fail must be an integer, not {raw!r}")
                )
            attempt = site._flaky_attempt(key)
            failed = attempt <= fail
            return self._send(500 if failed else 200, pages.flaky_page(key, attempt, failed))

        return False


class DemoSite:
    """The demo website on ``host:port`` (port 0 picks a free port), served from a daemon thread.

    ``hits(path)`` counts GET/POST requests per path (query string excluded); ``submissions``
    collects contact-form posts (the ticket number shown is ``len(submissions)`` after the post).
    ``reset()`` zeroes hits, submissions, ticket numbers and /flaky counters, opens every gate; logins survive it
    (the session cookie is a MAC, so a logged-in browser stays logged in).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.submissions: list[dict[str, str]] = []
        #: Added to every response, so tests can land a fault in the middle of a run.
        self.latency_ms = 0
        #: Delay between recording a contact-form post and answering it (a window to crash in).
        self.confirm_delay_ms = 0
        self._lock = threading.Lock()
        self._hits: Counter[str] = Counter()
        self._flaky: Counter[str] = Counter()
        self._gates: dict[str, threading.Event] = {}
        self._secret = secrets.token_bytes(16)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            return self
        server_cls = _Server6 if ":" in self.host else _Server
        server = server_cls((self.host, self.port), _Handler)
        server.site = self
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="browserq-demo-site",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. ``http://127.0.0.1:54321``."""
        if self._server is None:
            raise RuntimeError(
                "DemoSite is not started; call start() or use it as a context manager"
            )
        host = self.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    # --- counters and state ----------------------------------------------------------------------

    def hits(self, path: str) -> int:
        """How many GET/POST requests ``path`` got (a query string in ``path`` is ignored)."""
        path = urlsplit(path).path or "/"
        with self._lock:
            return self._hits[path]

    def all_hits(self) -> dict[str, int]:
        """A copy of every path's hit count."""
        with self._lock:
            return dict(self._hits)

    def reset(self) -> None:
        """Zero the hit counters, submissions (and so ticket numbers) and /flaky counters."""
        with self._lock:
            self._hits.clear()
            self._flaky.clear()
            self.submissions.clear()
            self.latency_ms = 0
            self.confirm_delay_ms = 0
            gates, self._gates = self._gates, {}
        for held in gates.values():  # nobody stays parked on a gate of an earlier test
            held.set()

    def gate(self, name: str) -> threading.Event:
        """The gate ``/gate?name=NAME`` waits on (made on first use, by the page or the test)."""
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def open_gate(self, name: str) -> None:
        """Let every request parked on ``/gate?name=NAME`` (and any later one) through."""
        self.gate(name).set()

    def _count(self, path: str) -> None:
        with self._lock:
            self._hits[path] += 1

    def _submit(self, form: dict[str, str]) -> int:
        with self._lock:
            self.submissions.append(form)
            return len(self.submissions)

    def submissions_snapshot(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self.submissions)

    def submissions_with(self, ref: str) -> int:
        """How many contact-form posts carried ``ref`` in their message (a side-effect counter)."""
        return sum(1 for s in self.submissions_snapshot() if ref in s.get("message", ""))

    def _flaky_attempt(self, key: str) -> int:
        with self._lock:
            self._flaky[key] += 1
            return self._flaky[key]

    def _token(self, username: str) -> str:
        return hmac.new(self._secret, username.encode(), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else f"{self.host}:{self.port} (stopped)"
        return f"<DemoSite {where}>"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m browserq.demo.site",
        description="Serve the browserq demo site until Ctrl-C.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8000, help="port (default 8000; 0 = any free port)"
    )
    args = parser.parse_args(argv)
    site = DemoSite(args.host, args.port).start()
    print(f"browserq demo site on {site.url}/  (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        site.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
