"""upload steps and ``file`` params on real Chromium: files from the uploads directory, from a
file param the producer stored, and every way out of the uploads directory refused."""

from __future__ import annotations

import hashlib
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from browserq import run_template
from browserq.errors import ParamError, TemplateInvalid
from browserq.execute.runtime import Runtime
from browserq.store import Store
from tests.actions.file_site import ECHOED, serve_file_site
from tests.conftest import producer_env, template
from tests.submit.conftest import REDIS_URL, Producer, producer_settings

CV = b"Ada Lovelace\nAnalyst\n" * 10
CV_SHA256 = hashlib.sha256(CV).hexdigest()


@pytest.fixture(scope="module")
def file_site() -> Iterator[str]:
    yield from serve_file_site()


@pytest.fixture
def uploads(sqlite_runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An uploads directory with two files, a symlink out of it and a secret beside it."""
    root = tmp_path / "uploads"
    (root / "forms").mkdir(parents=True)
    (root / "forms" / "cv.txt").write_bytes(CV)
    (root / "photo.png").write_bytes(b"\x89PNG fake")
    (tmp_path / "secret.txt").write_text("not for upload")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    monkeypatch.setattr(sqlite_runtime.settings, "uploads_dir", root)
    return root


def _upload(base: str, file_field: str, selector: str = "#one") -> str:
    return textwrap.dedent(f"""
        steps:
          - {{action: navigate, url: "{base}/form"}}
          - action: upload
            id: up
            selector: "{selector}"
            {file_field}
            into: sent
        """) + ECHOED.lstrip("\n")


def test_files_from_the_uploads_directory(sqlite_runtime: Runtime, uploads: Path, file_site: str) -> None:
    field = 'files: ["forms/cv.txt", {path: photo.png, filename: me.png}]'
    outcome = sqlite_runtime.run_loaded(template(_upload(file_site, field, "#many")))
    assert outcome.status == "completed", outcome
    assert outcome.outputs["echoed"] == [
        {"name": "many:cv.txt", "size": str(len(CV)), "sha256": CV_SHA256},
        {"name": "many:me.png", "size": "9", "sha256": hashlib.sha256(b"\x89PNG fake").hexdigest()},
    ]
    assert [f["filename"] for f in outcome.outputs["sent"]] == ["cv.txt", "me.png"]


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "forms/../../secret.txt", "C:/x"])
def test_paths_out_of_the_uploads_directory_are_refused_at_load(path: str) -> None:
    with pytest.raises(TemplateInvalid, match=r"upload path .* (contains '..'|is absolute)"):
        template(f'steps:\n  - {{action: upload, selector: "#one", file: {{path: "{path}"}}}}\n')


def test_a_symlink_out_of_the_uploads_directory_fails_the_step(
    sqlite_runtime: Runtime, uploads: Path, file_site: str
) -> None:
    outcome = sqlite_runtime.run_loaded(template(_upload(file_site, 'file: "link.txt"')))
    assert outcome.error_code == "PATH_DENIED", outcome
    assert "resolves outside BROWSERQ_UPLOADS_DIR" in outcome.error_message
    (step,) = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.step_id == "up"]
    assert (step.status, step.error_code) == ("failed", "PATH_DENIED")


def test_a_missing_file_and_a_missing_uploads_directory(
    sqlite_runtime: Runtime, uploads: Path, file_site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = sqlite_runtime.run_loaded(template(_upload(file_site, 'file: "nope.txt"')))
    assert outcome.error_code == "UPLOAD_FILE_MISSING", outcome
    monkeypatch.setattr(sqlite_runtime.settings, "uploads_dir", None)
    outcome = sqlite_runtime.run_loaded(template(_upload(file_site, 'file: "forms/cv.txt"')))
    assert outcome.error_code == "PATH_DENIED" and "set BROWSERQ_UPLOADS_DIR" in outcome.error_message


def test_a_path_built_from_a_param_is_judged_at_the_producer(sqlite_runtime: Runtime, uploads: Path) -> None:
    loaded = template("""
        params: {doc: {type: string}}
        steps:
          - {id: up, action: upload, selector: "#one", file: {path: "forms/${doc}"}}
        """)
    with pytest.raises(ParamError, match=r"step up: upload path 'forms/../../secret.txt' contains '..'"):
        sqlite_runtime.run_loaded(loaded, {"doc": "../../secret.txt"})


def test_another_runs_artifact_cannot_be_uploaded(sqlite_runtime: Runtime, file_site: str) -> None:
    other = uuid.uuid4().hex
    outcome = sqlite_runtime.run_loaded(template(_upload(file_site, f'file: {{artifact: "{other}/downloads/1/x.csv"}}')))
    assert outcome.error_code == "PATH_DENIED", outcome
    assert "not one of this run's" in outcome.error_message


FILE_PARAM_TEMPLATE = """
params:
  cv: {type: file, required: true}
steps:
  - {action: navigate, url: "%s/form"}
  - {id: up, action: upload, selector: "#one", file: "${cv}", into: sent}
"""


def test_a_file_param_is_stored_with_the_run_and_uploaded(sqlite_runtime: Runtime, file_site: str) -> None:
    body = FILE_PARAM_TEMPLATE % file_site + ECHOED.lstrip("\n")
    outcome = sqlite_runtime.run_loaded(template(body), {"cv": {"filename": "../my cv.txt", "content": CV}})
    assert outcome.status == "completed", outcome
    assert outcome.outputs["echoed"] == [{"name": "one:my cv.txt", "size": str(len(CV)), "sha256": CV_SHA256}]
    run = sqlite_runtime.store.runs.get_run(outcome.run_id)
    assert run is not None
    reference = run.params["cv"]  # the run keeps a reference, never the bytes
    assert reference == {"artifact": f"{outcome.run_id}/inputs/cv/my cv.txt", "filename": "my cv.txt",
                         "size": len(CV), "sha256": CV_SHA256, "content_type": "text/plain"}
    (row,) = [a for a in sqlite_runtime.store.steps.artifacts(outcome.run_id) if a.kind == "input"]
    assert (row.path, row.size, row.sha256, row.step_attempt_id) == (reference["artifact"], len(CV), CV_SHA256, None)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"filename": "cv.txt", "content": b"x" * 1001}, "the file is 1,001 bytes, over the limit of 1,000"),
        (b"x" * 2000, "the file is 2,000 bytes, over the limit of 1,000 (BROWSERQ_MAX_FILE_PARAM_BYTES)"),
        ("/etc/passwd", "got a string (a path is only read as pathlib.Path)"),
        ({"filename": "cv.txt", "content_base64": "not base64!"}, "content_base64 is not valid base64"),
        ({"artifact": "elsewhere/inputs/cv/x"}, "filename must be a non-empty string"),
    ],
)
def test_file_params_are_checked_at_the_producer(tmp_path: Path, value: object, message: str) -> None:
    with _producer(tmp_path) as producer:
        with pytest.raises(ParamError) as raised:
            run_template.apply_async(args=["cv"], kwargs={"params": {"cv": value}}, queue=producer.queue)
        assert "param 'cv': " + message in str(raised.value)
        assert producer.store.runs.list_runs() == [] and producer.messages() == []
        assert not list((tmp_path / "artifacts").glob("**/*.txt"))


def test_the_producer_stores_a_file_param_and_sends_only_its_reference(tmp_path: Path) -> None:
    (tmp_path / "cv.pdf").write_bytes(b"%PDF-1.4 tiny")
    with _producer(tmp_path) as producer:
        handle = run_template.apply_async(args=["cv"], kwargs={"params": {"cv": tmp_path / "cv.pdf"}},
                                          queue=producer.queue)
        run = producer.store.runs.get_run(handle.id)
        assert run is not None and run.params["cv"]["artifact"] == f"{handle.id}/inputs/cv/cv.pdf"
        assert (tmp_path / "artifacts" / handle.id / "inputs" / "cv" / "cv.pdf").read_bytes() == b"%PDF-1.4 tiny"
        (row,) = producer.store.steps.artifacts(handle.id)
        assert (row.kind, row.content_type, row.size) == ("input", "application/pdf", 13)
        (message,) = producer.messages()
        assert message["kwargs"] == {"run_id": handle.id}
        assert "PDF" not in str(message) and "JVBER" not in str(message)  # the bytes, nor their base64


class _producer:
    """A producer with the ``cv`` template (a file param of at most 1000 bytes), on Redis."""

    def __init__(self, tmp_path: Path) -> None:
        (tmp_path / "templates").mkdir()
        (tmp_path / "templates" / "cv.yaml").write_text(
            "name: cv\nversion: 1.0.0\n" + FILE_PARAM_TEMPLATE % "http://127.0.0.1:9")
        self.env = producer_settings(
            tmp_path, BROWSERQ_TEMPLATES_DIR=str(tmp_path / "templates"),
            BROWSERQ_ARTIFACTS_DIR=str(tmp_path / "artifacts"), BROWSERQ_MAX_FILE_PARAM_BYTES="1000")
        self.queue = f"bq_upload_test_{uuid.uuid4().hex[:8]}"
        self._env = producer_env(self.env)

    def __enter__(self) -> Producer:
        self._env.__enter__()
        self.store = Store(self.env["BROWSERQ_DATABASE_URL"])
        self.store.schema.upgrade()
        return Producer(self.queue, self.store)

    def __exit__(self, *exc: object) -> None:
        self.store.dispose()
        redis.Redis.from_url(REDIS_URL).delete(self.queue)
        self._env.__exit__(*exc)


def test_a_file_param_as_json_text_for_the_command_line(tmp_path: Path) -> None:
    """``browserq run -p cv=@cv.json`` hands the mapping over as text."""
    from browserq.execute.accept import prepare_loaded

    loaded = template(FILE_PARAM_TEMPLATE % "http://127.0.0.1:9")
    prepared = prepare_loaded(loaded, {"cv": '{"filename": "cv.txt", "content_base64": "aGk="}'})
    assert prepared.files["cv"].content == b"hi"
    assert prepared.params["cv"]["artifact"] == f"{prepared.run_id}/inputs/cv/cv.txt"
    with pytest.raises(ParamError, match="looks like a JSON mapping but does not parse"):
        prepare_loaded(loaded, {"cv": "{not json"})
