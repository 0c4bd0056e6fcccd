"""The rate limits' Redis stops answering in the middle of a run: the navigation it gated fails,
the run waits (``LIMITS_UNAVAILABLE``, policy WAIT: no run retry spent) and, once Redis answers
again, goes on from its last checkpoint to the end. Before, the gate's ``LimitsUnavailable``
reached the step's retry logic as if it were a step failure, which it is not (it has no code)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from browserq.execute.decide import RetryLater
from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.store.tcp_proxy import TcpProxy
from tests.support.http import serve_http
from tests.support.redis import LIMITS_DB, server, wait_for_redis

PAGES = {
    "/a": b"<html><body><a id='next' href='/b'>next</a></body></html>",
    "/b": b"<html><body><p id='done'>arrived</p></body></html>",
}


def test_the_limits_redis_gone_mid_run_makes_the_run_wait_then_finish(tmp_path: Path) -> None:
    redis_port = int(server().rsplit(":", 1)[1])  # this process's own Redis (tests/support/isolation.py)
    wait_for_redis(f"redis://127.0.0.1:{redis_port}/{LIMITS_DB}")
    proxy = TcpProxy("127.0.0.1", redis_port).start()
    served_a = threading.Event()

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGES.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body or b"")
            if self.path == "/a" and not served_a.is_set():
                served_a.set()
                proxy.cut()  # the limits Redis goes away once the first page is in

        def log_message(self, *_args: object) -> None:
            pass

    settings = make_settings(tmp_path, limits_redis_url=f"redis://127.0.0.1:{proxy.port}/{LIMITS_DB}",
                             rate_limits={"127.0.0.1": "50/s"})
    try:
        with serve_http(Pages) as host, Runtime(settings) as runtime:
            loaded = template(f"""
steps:
  - {{action: navigate, url: "http://{host}/a"}}
  - {{action: click, selector: "#next"}}
  - {{action: get, selector: "#done", into: done, what: text, timeout_s: 3}}  # its page never came
""")
            prepared = runtime.submit_loaded(loaded, {})
            waiting = runtime.execute(prepared.run_id)
            assert isinstance(waiting, RetryLater), waiting  # waits: not failed, no run retry spent
            assert f"limits Redis at redis://127.0.0.1:{proxy.port}/" in (waiting.outcome.error_message or "")
            failed = [s for s in runtime.store.steps.steps(prepared.run_id) if s.status == "failed"]
            assert [(s.step_path, s.error_code) for s in failed] == [("2", "LIMITS_UNAVAILABLE")]
            assert runtime.store.runs.get_run(prepared.run_id).status != "failed"
            proxy.restore()
            done = runtime.run_to_end(prepared.run_id)
    finally:
        proxy.stop()
    assert (done.status, done.outputs.get("done")) == ("completed", "arrived"), done
