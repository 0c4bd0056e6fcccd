"""TemplateRegistry: resolution rules, messages, broken-file isolation, duplicates, reloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browserq.errors import ConfigError, TemplateInvalid, TemplateNotFound
from browserq.templates import TemplateRegistry, parse_ref


def write(directory: Path, filename: str, name: str, version: str, selector: str = "a") -> Path:
    path = directory / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"name: {name}\nversion: {version}\nsteps:\n  - {{action: click, selector: '{selector}'}}\n"
    )
    return path


@pytest.fixture
def registry(tmp_path: Path) -> TemplateRegistry:
    for version in ("1.2.0", "1.2.1", "1.9.0", "1.10.0", "2.0.0", "0.9.9"):
        write(tmp_path, f"quotes-{version}.yaml", "quotes", version)
    write(tmp_path, "forms/login_form.yml", "login_form", "1.0.0")
    (tmp_path / "notes.txt").write_text("not a template")
    return TemplateRegistry(tmp_path)


@pytest.mark.parametrize(
    ("ref", "version"),
    [
        ("quotes", "2.0.0"),
        ("quotes@1", "1.10.0"),  # numeric, not string, ordering
        ("quotes@1.2", "1.2.1"),
        ("quotes@1.9", "1.9.0"),
        ("quotes@1.2.0", "1.2.0"),
        ("quotes@0", "0.9.9"),
        ("login_form", "1.0.0"),
    ],
)
def test_resolve(registry, ref, version) -> None:
    loaded = registry.resolve(ref)
    assert loaded.version == version
    assert loaded.ref == f"{ref.split('@')[0]}@{version}"


def test_list_is_sorted_numerically(registry) -> None:
    assert [t.ref for t in registry.list()] == [
        "login_form@1.0.0",
        "quotes@0.9.9",
        "quotes@1.2.0",
        "quotes@1.2.1",
        "quotes@1.9.0",
        "quotes@1.10.0",
        "quotes@2.0.0",
    ]
    assert registry.errors() == {}


def test_not_found_messages_say_what_exists(registry) -> None:
    with pytest.raises(TemplateNotFound) as info:
        registry.resolve("quotes@1.3")
    assert str(info.value) == (
        "template 'quotes' has no version matching 1.3; "
        "available: 0.9.9, 1.2.0, 1.2.1, 1.9.0, 1.10.0, 2.0.0"
    )
    with pytest.raises(TemplateNotFound) as info:
        registry.resolve("quotes@1.2.7")
    assert "has no version matching 1.2.7" in str(info.value)
    with pytest.raises(TemplateNotFound) as info:
        registry.resolve("quotse")
    assert str(info.value) == (
        "no template named 'quotse' (did you mean 'quotes'?); available: login_form, quotes"
    )


@pytest.mark.parametrize("ref", ["", "quotes@", "quotes@latest", "Quotes", "quotes@1.2.3.4", "a b"])
def test_invalid_refs(registry, ref) -> None:
    with pytest.raises(TemplateNotFound, match="invalid template reference"):
        registry.resolve(ref)


def test_parse_ref() -> None:
    assert parse_ref("quotes") == ("quotes", ())
    assert parse_ref("my.tpl-2@1.10") == ("my.tpl-2", (1, 10))
    assert parse_ref("x@3.0.1") == ("x", (3, 0, 1))


def test_broken_file_does_not_hide_good_ones(tmp_path) -> None:
    write(tmp_path, "good.yaml", "good", "1.0.0")
    write(tmp_path, "good-2.yaml", "good", "2.0.0", selector="${nope}")  # invalid reference
    (tmp_path / "broken.yaml").write_text(
        "name: broken\nversion: 1.0.0\nsteps:\n  - {action: clik}\n"
    )
    (tmp_path / "garbled.yaml").write_text("name: [unclosed\n")
    registry = TemplateRegistry(tmp_path)
    assert [t.ref for t in registry.list()] == ["good@1.0.0"]
    assert registry.resolve("good").version == "1.0.0"  # the newest *valid* version
    errors = registry.errors()
    assert set(errors) == {
        tmp_path / "good-2.yaml",
        tmp_path / "broken.yaml",
        tmp_path / "garbled.yaml",
    }
    assert all(isinstance(e, TemplateInvalid) for e in errors.values())
    assert "unknown action 'clik'" in str(errors[tmp_path / "broken.yaml"])
    # resolving a name whose only file is broken raises that file's problems
    with pytest.raises(TemplateInvalid) as info:
        registry.resolve("broken")
    assert info.value.source == str(tmp_path / "broken.yaml")
    with pytest.raises(TemplateInvalid) as info:
        registry.resolve("good@2")
    assert "${nope} refers to nothing" in str(info.value)
    with pytest.raises(TemplateInvalid):  # unparseable: matched by file name
        registry.resolve("garbled")


def test_same_name_and_version_in_two_files(tmp_path) -> None:
    first = write(tmp_path, "a.yaml", "dup", "1.0.0")
    second = write(tmp_path, "sub/b.yaml", "dup", "1.0.0")
    write(tmp_path, "c.yaml", "dup", "0.1.0")
    registry = TemplateRegistry(tmp_path)
    with pytest.raises(TemplateInvalid) as info:
        registry.resolve("dup@1.0.0")
    message = str(info.value)
    assert str(first) in message and str(second) in message
    assert "dup@1.0.0 is declared by more than one file" in message
    assert set(registry.errors()) == {first, second}
    assert registry.resolve("dup@0").version == "0.1.0"


def test_reloads_changed_added_and_removed_files(tmp_path) -> None:
    path = write(tmp_path, "t.yaml", "t", "1.0.0")
    registry = TemplateRegistry(tmp_path)
    before = registry.resolve("t")
    assert registry.resolve("t") is before  # cached while unchanged
    write(tmp_path, "t.yaml", "t", "1.0.0", selector="button.longer")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = registry.resolve("t")
    assert after is not before and after.template.steps[0].selector == "button.longer"
    write(tmp_path, "t2.yaml", "t", "1.1.0")
    assert registry.resolve("t").version == "1.1.0"
    (tmp_path / "t2.yaml").unlink()
    assert registry.resolve("t").version == "1.0.0"


def test_hidden_folders_are_ignored(tmp_path) -> None:
    write(tmp_path, ".git/x.yaml", "hidden", "1.0.0")
    registry = TemplateRegistry(tmp_path)
    with pytest.raises(TemplateNotFound, match=r"available: none \(no templates in"):
        registry.resolve("hidden")


def test_limits_are_applied(tmp_path) -> None:
    write(tmp_path, "t.yaml", "t", "1.0.0", selector="x" * 50)
    registry = TemplateRegistry(tmp_path, max_selector_length=20)
    with pytest.raises(TemplateInvalid, match="the limit is 20"):
        registry.resolve("t")


def test_missing_directory_names_the_setting(tmp_path) -> None:
    registry = TemplateRegistry(tmp_path / "nope")
    with pytest.raises(TemplateNotFound) as info:
        registry.resolve("x")
    assert isinstance(info.value, ConfigError)
    assert "BROWSERQ_TEMPLATES_DIR" in str(info.value) and "nope" in str(info.value)
    with pytest.raises(ConfigError):
        registry.list()


def test_from_settings_applies_every_settings_derived_limit(tmp_path) -> None:
    """One constructor path: the producer, the worker and ``browserq templates`` refuse alike."""
    from browserq.settings import Settings

    write(tmp_path, "long.yaml", "long", "1.0.0", selector="x" * 50)
    (tmp_path / "loop.yaml").write_text(
        "name: loop\nversion: 1.0.0\nsteps:\n  - repeat: {max: 20, steps: [{action: click, selector: a}]}\n"
    )
    settings = Settings(templates_dir=tmp_path, max_selector_length=20, max_repeat=10)
    registry = TemplateRegistry.from_settings(settings)
    assert registry.directory == tmp_path
    assert (registry.max_selector_length, registry.max_repeat) == (20, 10)
    with pytest.raises(TemplateInvalid, match="the limit is 20"):
        registry.resolve("long")
    with pytest.raises(TemplateInvalid, match=r"above the limit 10 \(max_repeat\)"):
        registry.resolve("loop")
    # a stored body and files outside the directory are checked with the same limits
    with pytest.raises(TemplateInvalid, match="the limit is 20"):
        registry.load_text((tmp_path / "long.yaml").read_text(), "long@1.0.0 (stored)")
    outcome = registry.validate_files([tmp_path / "long.yaml", tmp_path / "loop.yaml"])
    assert all(isinstance(v, TemplateInvalid) for v in outcome.values()), outcome


def test_validate_files_reports_duplicates_across_files(tmp_path) -> None:
    first = write(tmp_path, "a.yaml", "same", "1.0.0")
    second = write(tmp_path, "b.yaml", "same", "1.0.0")
    other = write(tmp_path, "c.yaml", "other", "1.0.0")
    outcome = TemplateRegistry(tmp_path).validate_files([first, second, other])
    assert isinstance(outcome[first], TemplateInvalid) and "more than one file" in str(outcome[first])
    assert isinstance(outcome[second], TemplateInvalid)
    assert outcome[other].ref == "other@1.0.0"
