"""ArtifactDir: atomic writes under <base>/<run_id>/, and no way out of the directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from browserq.errors import Codes, StepFailed
from browserq.store import ArtifactDir, ArtifactPathDenied, StoredFile


def test_write_and_locate(tmp_path: Path) -> None:
    artifacts = ArtifactDir(tmp_path / "artifacts")
    stored = artifacts.write("abc123", "0-1.png", b"\x89PNG data")
    assert isinstance(stored, StoredFile)
    assert stored.path == "abc123/0-1.png"
    assert stored.size == 9
    assert stored.sha256 == hashlib.sha256(b"\x89PNG data").hexdigest()
    assert stored.absolute == (tmp_path / "artifacts" / "abc123" / "0-1.png").resolve()
    assert stored.absolute.read_bytes() == b"\x89PNG data"
    assert artifacts.path_of(stored.path) == stored.absolute


def test_overwrite_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    artifacts = ArtifactDir(tmp_path)
    artifacts.write("run", "dom.html", b"old")
    stored = artifacts.write("run", "dom.html", b"new")
    assert stored.absolute.read_bytes() == b"new"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["dom.html"]


def test_subdirectories_are_allowed(tmp_path: Path) -> None:
    stored = ArtifactDir(tmp_path).write("run", "steps/1[3].0/shot.png", b"x")
    assert stored.path == "run/steps/1[3].0/shot.png"
    assert stored.absolute.is_file()


@pytest.mark.parametrize(
    "name",
    ["../evil", "/etc/passwd", "a/../../evil", "", ".", "a\\..\\b", "nul\x00", "C:/x", "dir/"],
)
def test_names_cannot_escape(tmp_path: Path, name: str) -> None:
    with pytest.raises(ArtifactPathDenied) as caught:
        ArtifactDir(tmp_path / "base").write("run", name, b"x")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, StepFailed)
    assert caught.value.code is Codes.PATH_DENIED
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize("run_id", ["..", "../x", "a/b", "", "/abs"])
def test_run_ids_are_one_component(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(ValueError):
        ArtifactDir(tmp_path).write(run_id, "x.png", b"x")


def test_path_of_refuses_escapes(tmp_path: Path) -> None:
    artifacts = ArtifactDir(tmp_path / "base")
    for bad in ("../x", "/etc/passwd", "run/../../x"):
        with pytest.raises(ValueError):
            artifacts.path_of(bad)


def test_symlinks_cannot_lead_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "base"
    base.mkdir()
    (base / "run").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError):
        ArtifactDir(base).write("run", "x.png", b"x")
    assert list(outside.iterdir()) == []


def test_delete_removes_the_file_and_an_emptied_run_folder(tmp_path: Path) -> None:
    artifacts = ArtifactDir(tmp_path)
    kept = artifacts.write("run", "a.png", b"a")
    probe = artifacts.write(".doctor", "probe", b"p")
    artifacts.delete(probe.path)
    assert not (tmp_path / ".doctor").exists()
    artifacts.write("run", "b.png", b"b")
    artifacts.delete("run/b.png")
    assert kept.absolute is not None and kept.absolute.read_bytes() == b"a"  # the run folder stays
    artifacts.delete("run/b.png")  # gone already: no error
    with pytest.raises(ValueError):
        artifacts.delete("../outside")
