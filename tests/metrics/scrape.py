"""Reading a worker's ``/metrics`` as Prometheus does: HTTP, then prometheus_client's own parser."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families


class Samples:
    """Every sample of one scrape, looked up by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [s for family in text_string_to_metric_families(text) for s in family.samples]

    def get(self, name: str, **labels: str) -> float | None:
        """The one sample ``name`` with exactly these ``labels`` (None: absent)."""
        found = [s.value for s in self.samples if s.name == name and s.labels == labels]
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else None

    def total(self, name: str, **labels: str) -> float:
        """The sum of ``name`` over every sample whose labels include ``labels``."""
        return sum(s.value for s in self.samples if s.name == name and labels.items() <= s.labels.items())

    def labelled(self, name: str) -> list[Mapping[str, str]]:
        return [s.labels for s in self.samples if s.name == name]


def get(port: int, path: str) -> tuple[int, str]:
    """Status and body of ``GET http://127.0.0.1:<port><path>``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scrape(port: int) -> Samples:
    status, body = get(port, "/metrics")
    assert status == 200, body
    return Samples(body)
