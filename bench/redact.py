"""What scrubbing a secret costs: every encoding (browserq.redact) vs. plain substrings.

Builds a trace-like payload (JSON lines of DOM snapshots, network entries with percent-encoded
URLs, escaped HTML — the text a Playwright trace is made of), plants a secret in a few of its
forms, and times, side by side on the same bytes:

* ``substrings``: the previous redactor's way — ``bytes.replace`` of five fixed forms (clear,
  JSON, three ``quote`` variants); it misses Chromium's form encoding, base64 and HTML escapes;
* ``redactor``: :meth:`browserq.redact.Redactor.bytes`, one pattern per secret for every form.

Prints medians of ``--repeat`` runs in ms and MB/s, and the ratio. Usage::

    .venv/bin/python bench/redact.py [--mb 4] [--secrets 1] [--repeat 7]
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import time
from urllib.parse import quote, quote_plus

from browserq.redact import Redactor

SECRET = "p&ss~w!rd \"<é>/+='x9"


def payload(mb: float) -> bytes:
    line = json.dumps({
        "type": "frame-snapshot",
        "snapshot": {"html": ["HTML", {}, ["BODY", {}, ["DIV", {"class": "quote"}, "“The world as we have created it…” & <more>"],
                                             ["A", {"href": "/quotes/page/2/?q=a%20b&x=%7E"}, "Next →"]]]},
        "network": {"url": "http://127.0.0.1:8000/search?q=caf%C3%A9&page=2", "headers": [{"name": "Cookie", "value": "a=b; c=d"}]},
    }).encode() + b"\n"
    planted = (
        json.dumps({"fill": SECRET}).encode()
        + b"\n" + quote_plus(SECRET).encode() + b"\n"
        + b"Authorization: Basic " + base64.b64encode(f"user:{SECRET}".encode()) + b"\n"
    )
    body = line * int(mb * 1_000_000 / len(line))
    return body[: len(body) // 2] + planted + body[len(body) // 2 :]


def substrings(data: bytes, secret: str) -> bytes:
    for form in {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)}:
        data = data.replace(form.encode(), b"[secret]")
    return data


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--secrets", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    data = payload(args.mb)
    secrets = {f"s{i}": f"{SECRET}{i}" if i else SECRET for i in range(args.secrets)}
    redactor = Redactor(secrets)
    old = median_ms(lambda: [substrings(data, s) for s in secrets.values()], args.repeat)
    new = median_ms(lambda: redactor.bytes(data), args.repeat)
    size = len(data) / 1e6
    print(f"payload {size:.1f} MB, {args.secrets} secret(s), median of {args.repeat}")
    print(f"  substrings  {old:8.1f} ms  {size / old * 1000:7.1f} MB/s")
    print(f"  redactor    {new:8.1f} ms  {size / new * 1000:7.1f} MB/s   ({new / old:.1f}x the substrings' time)")
    print(f"  planted forms left: substrings {sum(f in substrings(data, SECRET) for f in _planted())}/3, "
          f"redactor {sum(f in redactor.bytes(data) for f in _planted())}/3")


def _planted() -> list[bytes]:
    return [json.dumps(SECRET)[1:-1].encode(), quote_plus(SECRET).encode(),
            base64.b64encode(f"user:{SECRET}".encode())]


if __name__ == "__main__":
    main()
