"""`browserq templates validate|list`: the producer's limits, duplicates and hostile files."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import browserq, no_traceback

GOOD = "name: good\nversion: 1.0.0\nsteps:\n  - {action: click, selector: a}\n"


def test_templates_validate_and_list(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nversion: 1.0.0\nsteps:\n  - action: navigate\n    url: file:///etc/passwd\n")
    done = browserq(tmp_path, "templates", "validate", str(bad))
    assert done.returncode == 1 and "file" in done.stderr and "line 5" in done.stderr
    done = browserq(tmp_path, "templates", "validate")
    assert done.returncode == 0 and "quotes@1.2.0" in done.stdout
    listed = browserq(tmp_path, "templates", "list")
    assert "login_form" in listed.stdout

def test_validate_refuses_two_files_declaring_one_name_and_version(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "good.yaml").write_text(GOOD)
    (templates / "a.yaml").write_text(GOOD.replace("good", "dup"))
    (templates / "b.yaml").write_text(GOOD.replace("good", "dup").replace("selector: a", "selector: b"))
    done = browserq(tmp_path, "templates", "validate", BROWSERQ_TEMPLATES_DIR=str(templates))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "dup@1.0.0 is declared by more than one file" in done.stderr
    assert str(templates / "a.yaml") in done.stderr and str(templates / "b.yaml") in done.stderr
    assert "good@1.0.0" in done.stdout
    # the same when the files are named one by one
    named = browserq(tmp_path, "templates", "validate", str(templates / "a.yaml"), str(templates / "b.yaml"))
    assert named.returncode == 1 and "declared by more than one file" in named.stderr

def test_list_and_validate_show_a_hostile_file_without_a_traceback(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "good.yaml").write_text(GOOD)
    (templates / "deep.yaml").write_text(
        "name: deep\nversion: 2.0.0\nsteps:\n  - {action: click, selector: a}\nx: "
        + "[" * 3000 + "]" * 3000 + "\n"
    )
    listed = browserq(tmp_path, "templates", "list", BROWSERQ_TEMPLATES_DIR=str(templates))
    output = listed.stdout + listed.stderr
    assert listed.returncode == 0 and "Traceback" not in output, output[-2000:]
    rows = {line.split("│")[1].strip(): line for line in listed.stdout.splitlines() if line.count("│") > 2}
    assert "good" in rows and "deep" in rows, listed.stdout
    assert "2.0.0" in rows["deep"] and "invalid" in rows["deep"]
    assert "template deep@2.0.0 is invalid" in listed.stderr and "line 5" in listed.stderr
    checked = browserq(tmp_path, "templates", "validate", BROWSERQ_TEMPLATES_DIR=str(templates))
    assert checked.returncode == 1 and "Traceback" not in checked.stdout + checked.stderr
    assert "more than 64 deep" in checked.stderr and "good@1.0.0" in checked.stdout

def test_an_unreadable_template_file_is_one_line_in_validate(tmp_path: Path) -> None:
    bad = tmp_path / "nul.yaml"
    bad.write_bytes(b"name: x\nversion: 1.0.0\nsteps: [\x00]\n")
    done = browserq(tmp_path, "templates", "validate", str(bad))
    assert done.returncode == 1
    no_traceback(done)
    assert "nul.yaml" in done.stderr and "invalid YAML" in done.stderr and "#x0000" in done.stderr


def test_validate_and_list_apply_the_producers_limits(tmp_path: Path) -> None:
    """Both build the registry from the settings: a limit the producer enforces, they enforce."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "long.yaml").write_text(GOOD.replace("selector: a", "selector: " + "x" * 40))
    env = {"BROWSERQ_TEMPLATES_DIR": str(templates), "BROWSERQ_MAX_SELECTOR_LENGTH": "30"}
    checked = browserq(tmp_path, "templates", "validate", **env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "the limit is 30 (max_selector_length)" in checked.stderr
    listed = browserq(tmp_path, "templates", "list", **env)
    assert listed.returncode == 0 and "the limit is 30 (max_selector_length)" in listed.stderr
    assert browserq(tmp_path, "templates", "validate", BROWSERQ_TEMPLATES_DIR=str(templates)).returncode == 0
