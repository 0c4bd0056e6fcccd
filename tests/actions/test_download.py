"""download steps on real Chromium: the file is kept as an artifact, its limits hold, its name is
made safe, and the step records honestly what went wrong."""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserq.errors import TemplateInvalid
from browserq.execute.runtime import Runtime
from browserq.guards import MAX_FILENAME_BYTES, safe_filename
from browserq.store.artifacts import artifact_store
from tests.actions.file_site import BIG, CSV, CSV_SHA256, ECHOED, serve_file_site
from tests.actions.stream_site import StreamSite
from tests.conftest import template
from tests.support.http import serve_http


@pytest.fixture(scope="module")
def file_site() -> Iterator[str]:
    yield from serve_file_site()


def _download_then_upload(base: str) -> str:
    return textwrap.dedent(f"""
        steps:
          - {{action: navigate, url: "{base}/"}}
          - {{id: fetch, action: download, selector: "#csv", into: report}}
          - {{action: navigate, url: "{base}/form"}}
          - action: upload
            selector: "#one"
            file: {{artifact: "${{outputs.report.artifact}}"}}
            into: sent
        """) + ECHOED.lstrip("\n")


def test_a_downloaded_csv_is_kept_and_uploaded_again(any_runtime: Runtime, file_site: str) -> None:
    outcome = any_runtime.run_loaded(template(_download_then_upload(file_site)))
    assert outcome.status == "completed", outcome
    report = outcome.outputs["report"]
    assert report["filename"] == "report.csv"
    assert report["size"] == len(CSV) and report["sha256"] == CSV_SHA256
    assert report["content_type"].startswith("text/csv")
    assert report["artifact"] == f"{outcome.run_id}/downloads/1/report.csv"
    # the artifact row and the bytes in the store
    rows = [a for a in any_runtime.store.steps.artifacts(outcome.run_id) if a.kind == "download"]
    assert [(r.path, r.size, r.sha256) for r in rows] == [(report["artifact"], len(CSV), CSV_SHA256)]
    stored = artifact_store(any_runtime.settings).read_bytes(report["artifact"])
    assert hashlib.sha256(stored).hexdigest() == CSV_SHA256
    steps = {s.step_id: s for s in any_runtime.store.steps.steps(outcome.run_id)}
    assert steps["fetch"].status == "succeeded" and steps["fetch"].output == report
    assert rows[0].step_attempt_id == steps["fetch"].id
    # the same bytes reached the form's server
    assert outcome.outputs["sent"] == [{"filename": "report.csv", "size": len(CSV), "sha256": CSV_SHA256}]
    assert outcome.outputs["echoed"] == [{"name": "one:report.csv", "size": str(len(CSV)), "sha256": CSV_SHA256}]


def test_a_download_by_url_and_a_hostile_file_name(sqlite_runtime: Runtime, file_site: str) -> None:
    loaded = template(f"""
        steps:
          - {{action: navigate, url: "{file_site}/"}}
          - {{action: download, url: "{file_site}/report.csv", into: direct}}
          - {{action: download, selector: "#evil", into: evil}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["direct"]["sha256"] == CSV_SHA256
    evil = outcome.outputs["evil"]
    name = evil["filename"]
    assert "/" not in name and "\\" not in name and not name.startswith(".")
    assert all(ch.isprintable() and ch != "\u202e" for ch in name), name
    assert evil["artifact"] == f"{outcome.run_id}/downloads/2/{name}"
    path = Path(sqlite_runtime.settings.artifacts_dir / evil["artifact"]).resolve()
    assert path.is_relative_to((sqlite_runtime.settings.artifacts_dir / outcome.run_id).resolve())
    assert path.read_bytes() == b"evil"


def test_an_oversize_download_fails_the_step_and_is_not_kept(
    sqlite_runtime: Runtime, file_site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_runtime.settings, "max_download_bytes", BIG - 1)
    loaded = template(f"""
        steps:
          - {{action: navigate, url: "{file_site}/"}}
          - {{id: big, action: download, selector: "#big", into: big}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "failed"
    assert outcome.error_code == "DOWNLOAD_TOO_LARGE", outcome
    assert "BROWSERQ_MAX_DOWNLOAD_BYTES" in outcome.error_message
    steps = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.step_id == "big"]
    assert [(s.status, s.error_code) for s in steps] == [("failed", "DOWNLOAD_TOO_LARGE")]  # permanent: no retry
    assert not [a for a in sqlite_runtime.store.steps.artifacts(outcome.run_id) if a.kind == "download"]
    assert not (sqlite_runtime.settings.artifacts_dir / outcome.run_id / "downloads").exists()


def test_the_run_download_budget_adds_up(
    sqlite_runtime: Runtime, file_site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_runtime.settings, "max_run_download_bytes", len(CSV) * 2 + 1)
    loaded = template(f"""
        steps:
          - {{action: navigate, url: "{file_site}/"}}
          - {{action: download, selector: "#csv"}}
          - {{action: download, selector: "#csv"}}
          - {{id: third, action: download, selector: "#csv"}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.error_code == "DOWNLOAD_TOO_LARGE", outcome
    assert outcome.error_step_path == "3" and "BROWSERQ_MAX_RUN_DOWNLOAD_BYTES" in outcome.error_message


def test_a_step_that_starts_no_download_fails_with_its_own_code(sqlite_runtime: Runtime, file_site: str) -> None:
    loaded = template(f"""
        steps:
          - {{action: navigate, url: "{file_site}/"}}
          - {{id: none, action: download, selector: "#nothing", timeout_s: 1, retries: 0}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.error_code == "DOWNLOAD_FAILED", outcome
    assert "started no download" in outcome.error_message


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("{action: download}", "download needs exactly one of selector, url"),
        ('{action: download, selector: "a", url: "http://x.test/"}', "download needs exactly one of selector, url; got selector, url"),
        ('{action: download, url: "file:///etc/passwd"}', "URL scheme 'file:' is not allowed"),
    ],
)
def test_bad_download_steps_are_refused_at_load(step: str, message: str) -> None:
    with pytest.raises(TemplateInvalid) as raised:
        template(f"steps:\n  - {step}\n")
    assert message in str(raised.value)
    assert "steps[0]" in str(raised.value) or "steps.0" in str(raised.value)


@pytest.mark.parametrize(
    ("suggested", "kept"),
    [
        ("report.csv", "report.csv"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\evil.bat", "evil.bat"),
        ("..", "download"),
        (".bashrc", "bashrc"),
        ("invoice\u202efdp.exe", "invoicefdp.exe"),
        ("a\nb\x00c.txt", "abc.txt"),
        ("x" * 300 + ".csv", "x" * 116 + ".csv"),
        ("\U0001f600" * 200 + ".txt", "\U0001f600" * 49 + ".txt"),  # 200 bytes of UTF-8, cut between characters
        ("\u00e9" * 150, "\u00e9" * 100),
        ("\uff0e\uff0e\uff0f\uff0e\uff0e\uff0fetc\uff0fpasswd", "passwd"),  # fullwidth ../../etc/passwd (NFKC)
        ("\uff0e\uff0e", "download"),
        ("\uff0ebashrc", "bashrc"),
        ("a\uff3cb\uff3cevil.bat", "evil.bat"),  # fullwidth backslashes
        ("\ufb01le\u2024txt", "file.txt"),  # ligature fi and ONE DOT LEADER fold to ASCII
    ],
)
def test_suggested_file_names_are_made_safe(suggested: str, kept: str) -> None:
    assert safe_filename(suggested) == kept
    assert len(kept.encode("utf-8")) <= MAX_FILENAME_BYTES


def test_a_download_named_with_200_emoji_is_kept_under_a_bounded_name(sqlite_runtime: Runtime) -> None:
    """The name the page suggests is 800 bytes: the file system refuses names over 255 (the old
    code ended INTERNAL with a raw OSError); it is kept under a name of at most 200 bytes."""
    with serve_http(StreamSite) as address:
        outcome = sqlite_runtime.run_loaded(template(f"""
            steps:
              - {{action: navigate, url: "http://{address}/"}}
              - {{action: download, selector: "#emoji", into: file}}
            """))
    assert outcome.status == "completed", outcome
    name = outcome.outputs["file"]["filename"]
    assert name == "\U0001f600" * 49 + ".txt" and outcome.outputs["file"]["size"] == 4
    assert outcome.outputs["file"]["artifact"] == f"{outcome.run_id}/downloads/1/{name}"
    assert (sqlite_runtime.settings.artifacts_dir / outcome.outputs["file"]["artifact"]).read_bytes() == b"xxxx"


@pytest.mark.parametrize("name", ["\uff0e\uff0e\uff0fshot.png", "a" * 241 + ".png"])
def test_artifact_names_that_fold_to_dot_dot_or_pass_the_byte_limit_are_refused_at_load(name: str) -> None:
    with pytest.raises(TemplateInvalid) as raised:
        template(f'steps:\n  - {{action: screenshot, name: "{name}"}}\n')
    assert "'..'" in str(raised.value) or "bytes of UTF-8" in str(raised.value)
