"""The README's webhook receiver, run as written: it accepts what browserq signs and refuses a
tampered body, another secret and an old timestamp (so the example people copy is right)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from browserq.webhooks import sign
from tests.support import REPO
from tests.support.http import free_port
from tests.support.polling import wait_until

SECRET = "whsec-readme-0123456789"
BODY = b'{"event":"waiting_for_human","run_id":"abc","handoff":{"message":"m"},"live_url":"http://x/live/1?token=t"}'


@pytest.fixture(scope="module")
def receiver() -> Iterator[str]:
    readme = (REPO / "docs" / "human-loop.md").read_text()
    code = re.search(r"A receiver that checks the signature.*?```python\n(.*?)```", readme, re.S)
    assert code, "the README lost its receiver example"
    port = free_port()
    source = code.group(1).replace("8088", str(port))
    proc = subprocess.Popen([sys.executable, "-c", source], env={"BROWSERQ_WEBHOOK_SECRET": SECRET, "PATH": "/usr/bin"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/hook"
    try:
        wait_until(lambda: proc.poll() is not None or _post(url, b"{}", {}) == 401, 20, "the README receiver")
        assert proc.poll() is None, proc.communicate()[0]
        yield url
    finally:
        proc.kill()
        proc.wait()


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _signed(body: bytes, secret: str = SECRET, at: int | None = None) -> dict[str, str]:
    stamp = int(time.time()) if at is None else at
    return {"X-Browserq-Timestamp": str(stamp), "X-Browserq-Signature": sign(secret, stamp, body)}


def test_the_readme_receiver_accepts_a_signed_body_and_refuses_the_rest(receiver: str) -> None:
    assert _post(receiver, BODY, _signed(BODY)) == 204
    assert _post(receiver, BODY.replace(b"abc", b"abd"), _signed(BODY)) == 401  # tampered
    assert _post(receiver, BODY, _signed(BODY, secret="another")) == 401
    assert _post(receiver, BODY, _signed(BODY, at=int(time.time()) - 3600)) == 401  # a replay
