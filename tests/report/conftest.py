"""Real runs to report on: recorded by the in-process runtime (real Chromium, SQLite) against
a site on 127.0.0.1 whose text and console carry script and markup (tests/report/pages.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from browserq.execute.runtime import Runtime
from tests.conftest import template
from tests.report.pages import HostilePages
from tests.support.http import serve_http

#: A secret param of the completed run: stored encrypted, masked in its params, never in a report.
SECRET = "hunter2-report-secret"
#: The failing selector breaks out of an attribute if a report writes it unescaped.
BAD_SELECTOR = "[title='\\\"><b id=injected>buy']"


@dataclass(frozen=True)
class Runs:
    runtime: Runtime
    site: str
    completed: str  # run id: navigate, extract, get, screenshot, a skipped optional click, wait
    failed: str  # run id: a click that fails twice (retry) → failure snapshot + trace


@pytest.fixture(scope="session")
def hostile_site() -> Iterator[str]:
    with serve_http(HostilePages) as host:
        yield f"http://{host}"


@pytest.fixture(scope="session")
def runs(sqlite_runtime: Runtime, hostile_site: str) -> Runs:
    completed = template(
        """
        params:
          token: {type: secret, required: true}
        steps:
          - {id: open, action: navigate, url: "%s/quotes"}
          - {id: quotes, action: extract, selector: ".quote", fields: {text: ".text", author: ".author"}, into: quotes}
          - {id: title, action: get, what: title, into: title}
          - {id: picture, action: screenshot, name: quotes.png}
          - {id: banner, action: click, selector: "#cookie-banner", optional: true, timeout_s: 0.3}
          - {id: settle, action: wait, ms: 200}
        """ % hostile_site
    )
    done = sqlite_runtime.run_loaded(completed, {"token": SECRET})
    assert done.status == "completed", done
    failing = template(
        """
        settings: {trace: on_failure, step_timeout_s: 1}
        steps:
          - {id: open, action: navigate, url: "%s/quotes"}
          - {id: quotes, action: extract, selector: ".quote", fields: {text: ".text"}, into: quotes}
          - {id: buy, action: click, selector: "%s", retries: 1}
        """ % (hostile_site, BAD_SELECTOR)
    )
    failed = sqlite_runtime.run_loaded(failing)
    assert failed.status == "failed" and failed.error_code == "SELECTOR_NOT_FOUND", failed
    return Runs(sqlite_runtime, hostile_site, done.run_id, failed.run_id)
