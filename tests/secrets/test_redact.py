"""The redactor against every form of a secret, trace member names, checkpoints, logs, CLI input."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from pathlib import Path

import pytest

from browserq.errors import ConfigError
from browserq.logs import SecretsFilter
from browserq.redact import Redactor, active, scrub_active
from browserq.runner.checkpoint import Checkpoint
from browserq.secrets import SecretBox
from tests.conftest import TEST_SECRET_KEY
from tests.secrets.forms import find_leaks, secret_forms

SECRETS = [
    'p&ss~w!rd "<é>/+=\'',
    "a\\b/c\"d\ne\tf😀g",
    "plainpassword",
    "tok+en/with==",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_every_form_of_a_secret_is_scrubbed_from_text_and_bytes(secret: str) -> None:
    redactor = Redactor({"password": secret})
    for user in ("u", "us", "user", "admin"):  # base64 of user:secret, every alignment
        forms = secret_forms(secret, basic_user=user)
        for label, form in forms.items():
            if label.startswith("first"):
                continue  # a prefix alone is not the secret (see the trace test for prefixes)
            text = f"<before {label}>{form.decode()}<after>"
            assert find_leaks([("text", redactor.text(text).encode())], _whole(forms)) == [], label
            data = b"\x00\xffbefore" + form + b"after\x00"
            assert find_leaks([("bytes", redactor.bytes(data))], _whole(forms)) == [], label
            assert redactor.contains(text), label


def _whole(forms: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in forms.items() if not k.startswith("first")}


def test_text_around_a_secret_is_kept_and_other_values_untouched() -> None:
    redactor = Redactor({"password": "hunter22", "pin": "12"})
    assert redactor.text("url?token=hunter22&x=1") == "url?token=[secret:password]&x=1"
    assert redactor.text("hunter2") == "hunter2"
    assert redactor.text("12") == "[secret:pin]"  # short secrets: only a whole value
    assert redactor.text("order 12 of 120") == "order 12 of 120"
    assert redactor.data({"hunter22": ["a", "x hunter22"]}) == {"[secret:password]": ["a", "x [secret:password]"]}


def _trace_zip(secret: str) -> tuple[bytes, str, str]:
    body = f"<html><input value='{secret}'></html>".encode()
    sha1 = hashlib.sha1(body).hexdigest()
    plain = b"<html>nothing to hide</html>"
    plain_sha1 = hashlib.sha1(plain).hexdigest()
    network = json.dumps({"snapshot": {"response": {"content": {"_sha1": f"{sha1}.html"}}, "other": f"{plain_sha1}.html"}})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("trace.trace", json.dumps({"type": "frame-snapshot", "sha1": sha1}) + "\n")
        archive.writestr("trace.network", network + "\n")
        archive.writestr(f"resources/{sha1}.html", body)
        archive.writestr(f"resources/{plain_sha1}.html", plain)
    return buffer.getvalue(), sha1, plain_sha1


def test_scrubbed_trace_members_are_renamed_and_references_follow(tmp_path: Path) -> None:
    secret = 'p&ss~w!rd "<é>/+='
    data, old_sha1, plain_sha1 = _trace_zip(secret)
    path = tmp_path / "trace.zip"
    path.write_bytes(data)
    Redactor({"password": secret}).zip_file(path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        contents = {n: archive.read(n) for n in names}
    everything = b"".join(contents.values()) + "".join(names).encode()
    assert old_sha1.encode() not in everything  # the hash of content holding the secret is gone
    resources = [n for n in names if n.startswith("resources/")]
    for name in resources:  # still content-addressed: named after what they hold now
        assert Path(name).stem == hashlib.sha1(contents[name]).hexdigest()
    assert f"resources/{plain_sha1}.html" in names  # untouched members keep their names
    new_sha1 = next(Path(n).stem for n in resources if Path(n).stem != plain_sha1)
    assert json.loads(contents["trace.trace"])["sha1"] == new_sha1
    assert json.loads(contents["trace.network"])["snapshot"]["response"]["content"]["_sha1"] == f"{new_sha1}.html"
    assert find_leaks([("zip", everything)], _whole(secret_forms(secret))) == []


CHECKPOINT_SECRET = 'p&ss~w!rd "<é>'


def _checkpoint() -> Checkpoint:
    from urllib.parse import quote

    return Checkpoint(
        path="3",
        url=f"http://127.0.0.1/page?token={quote(CHECKPOINT_SECRET)}",
        outputs={"echo": CHECKPOINT_SECRET},
        loops=[],
        storage={"cookies": [{"name": "s", "value": quote(CHECKPOINT_SECRET)}], "origins": []},
    )


@pytest.mark.parametrize("box", ["key", "process", "none"])
def test_checkpoint_record_never_holds_a_secret_in_clear(box: str) -> None:
    redactor = Redactor({"password": CHECKPOINT_SECRET})
    secret_box = {
        "key": SecretBox(TEST_SECRET_KEY),
        "process": SecretBox.for_this_process(),
        "none": SecretBox(None),
    }[box]
    record = _checkpoint().to_record(secret_box, redactor)
    encoded = json.dumps(record).encode()
    assert find_leaks([("checkpoint", encoded)], _whole(secret_forms(CHECKPOINT_SECRET))) == []
    assert "[secret:password]" in record["url"]  # still readable for people
    if box != "none":  # encrypted: a resume in a process holding the key gets the real values
        restored = Checkpoint.from_record(record, secret_box)
        assert restored.url == _checkpoint().url and restored.outputs == {"echo": CHECKPOINT_SECRET}


def test_checkpoint_encrypted_for_one_process_cannot_be_read_by_another() -> None:
    record = _checkpoint().to_record(SecretBox.for_this_process(), Redactor({"password": CHECKPOINT_SECRET}))
    assert record["key"] == "process"
    with pytest.raises(ConfigError, match="BROWSERQ_SECRET_KEY was unset"):
        Checkpoint.from_record(record, SecretBox(TEST_SECRET_KEY))


def test_log_lines_and_tracebacks_are_scrubbed_while_a_run_is_active() -> None:
    secret = "s3cr&t~value!"
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretsFilter())
    logger = logging.getLogger("test.secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with active(Redactor({"password": secret})):
            assert scrub_active(f"x {secret}") == "x [secret:password]"
            logger.warning("navigating to %s", f"http://h/?t={secret.replace('&', '%26')}")
            try:
                raise RuntimeError(f"page said {secret}")
            except RuntimeError:
                logger.exception("failed")
        logger.warning("after the run: %s", "nothing to hide")
    finally:
        logger.removeHandler(handler)
    output = stream.getvalue()
    assert "RuntimeError: page said [secret:password]" in output
    assert "?t=[secret:password]" in output and "nothing to hide" in output
    assert find_leaks([("log", output.encode())], _whole(secret_forms(secret))) == []
    assert scrub_active(secret) == secret  # no run active: nothing registered any more


def test_cli_reads_values_from_files_and_stdin(tmp_path: Path) -> None:
    from browserq.cli import parse_params

    secret_file = tmp_path / "pw"
    secret_file.write_text("from-file&~!\n")
    params = parse_params(
        ["a=plain", f"b=@{secret_file}", "c=@-", "d=@@literal", "e=x=y"],
        stdin=io.StringIO("from-stdin\n"),
    )
    assert params == {"a": "plain", "b": "from-file&~!", "c": "from-stdin", "d": "@literal", "e": "x=y"}


def test_cli_reports_an_unreadable_file_and_a_second_stdin(tmp_path: Path) -> None:
    import typer

    from browserq.cli import parse_params

    with pytest.raises(typer.Exit):
        parse_params([f"b=@{tmp_path / 'missing'}"])
    with pytest.raises(typer.Exit):
        parse_params(["a=@-", "b=@-"], stdin=io.StringIO("x"))


def test_a_value_added_while_the_run_runs_is_masked_from_then_on_in_every_form() -> None:
    """What a person typed in a handoff is learned mid-run (browserq.live.typed)."""
    redactor = Redactor({"password": "plainpassword"})
    typed = "Tÿped-by-a-person"
    assert typed in redactor.text(typed)
    redactor.add("typed", typed)
    redactor.add("typed", typed)  # once is enough
    forms = {label: form for label, form in secret_forms(typed).items() if not label.startswith("first")}
    for label, form in forms.items():
        assert find_leaks([(label, redactor.bytes(b"<" + form + b">"))], forms) == []
    assert redactor.text(f"k={typed}&p=plainpassword") == "k=[secret:typed]&p=[secret:password]"
