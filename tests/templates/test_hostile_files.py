"""One hostile file in the templates directory breaks only itself, and is reported under its name.

Each body below used to break every lookup (RecursionError / ValueError out of the registry), or
made the registry report every template missing, or was filed under the wrong name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq.errors import TemplateInvalid
from browserq.templates import TemplateRegistry, load_template_text

# The limits (browserq.templates: source.MAX_DEPTH, checks.MAX_REPEAT_NESTING,
# loader.MAX_TEMPLATE_BYTES), spelled out so this file also runs against code without them.
MAX_DEPTH = 64
MAX_REPEAT_NESTING = 8
MAX_TEMPLATE_BYTES = 1 << 20

GOOD = "name: good\nversion: 1.0.0\nsteps:\n  - {action: click, selector: a}\n"
CLICK = "{action: click, selector: a}"


def nested_repeats(levels: int) -> str:
    inner = CLICK
    for _ in range(levels):
        inner = "{repeat: {max: 2, steps: [" + inner + "]}}"
    return inner


def alias_chain(links: int) -> str:
    """Each anchor nests the previous one 30 deep: shallow text, deep data once expanded."""
    lines = ["a0: &a0 x"]
    for i in range(1, links + 1):
        lines.append(f"a{i}: &a{i} " + "[" * 30 + f"*a{i - 1}" + "]" * 30)
    return "\n".join(lines) + f"\nz: *a{links}\n"


HOSTILE = {
    # name: (file body, a fragment of the problem, the line it is reported on)
    "nested_lists": (
        "name: nested_lists\nversion: 1.0.0\nsteps:\n  - " + CLICK + "\ndescription: "
        + "[" * 3000 + "]" * 3000 + "\n",
        f"more than {MAX_DEPTH} deep",
        5,
    ),
    "nested_repeats": (
        "name: nested_repeats\nversion: 1.0.0\nsteps:\n  - " + nested_repeats(300) + "\n",
        f"more than {MAX_DEPTH} deep",
        4,
    ),
    "big_int_default": (
        "name: big_int_default\nversion: 1.0.0\nparams:\n  n: {type: int, default: "
        + "9" * 5000 + "}\nsteps:\n  - " + CLICK + "\n",
        "integers are limited to 100 digits",
        4,
    ),
    "big_hex_default": (
        "name: big_hex_default\nversion: 1.0.0\nparams:\n  n: {type: int, default: 0x"
        + "f" * 5000 + "}\nsteps:\n  - " + CLICK + "\n",
        "integers are limited to 100 digits",
        4,
    ),
    "long_version": (
        "name: long_version\nversion: 1.0." + "9" * 5000 + "\nsteps:\n  - " + CLICK + "\n",
        "each part at most 9 digits",
        2,
    ),
    "deep_through_aliases": (
        "name: deep_through_aliases\nversion: 1.0.0\nsteps:\n  - " + CLICK + "\nsettings: {}\n"
        + "x:\n" + "".join("  " + line + "\n" for line in alias_chain(5).splitlines()),
        "(counting aliases)",
        0,
    ),
    "too_many_repeat_levels": (
        "name: too_many_repeat_levels\nversion: 1.0.0\nsteps:\n  - "
        + nested_repeats(MAX_REPEAT_NESTING + 1) + "\n",
        f"repeats nest more than {MAX_REPEAT_NESTING} deep",
        4,
    ),
    "nul_escape": (
        'name: nul_escape\nversion: 1.0.0\nparams:\n  s: {type: string, default: "a\\0b"}\n'
        "steps:\n  - " + CLICK + "\n",
        "NUL character or a lone surrogate",
        4,
    ),
    "surrogate_escape": (
        "name: surrogate_escape\nversion: 1.0.0\nsteps:\n  - {action: click, selector: \"a\\ud800\"}\n",
        "NUL character or a lone surrogate",
        4,
    ),
    "one_bad_step": (
        "name: one_bad_step\nversion: 1.0.0\nsteps:\n  - " + CLICK + "\n  - {action: navigate}\n",
        "missing required field 'url'",
        5,
    ),
    "syntax_error": (
        "name: syntax_error\nversion: 1.0.0\nsteps: [unclosed\n",
        "invalid YAML",
        0,
    ),
    "huge_file": (
        "name: huge_file\nversion: 1.0.0\nsteps:\n  - " + CLICK + "\n"
        + "# padding\n" * (MAX_TEMPLATE_BYTES // 10 + 1),
        "templates are limited to",
        0,
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_file_breaks_only_itself(tmp_path: Path, name: str) -> None:
    body, fragment, line = HOSTILE[name]
    (tmp_path / "good.yaml").write_text(GOOD)
    # the file name says nothing: the template is found under the name it declares
    (tmp_path / "upload-7.yaml").write_text(body)
    registry = TemplateRegistry(tmp_path)

    assert registry.resolve("good").ref == "good@1.0.0"
    assert [t.ref for t in registry.list()] == ["good@1.0.0"]
    with pytest.raises(TemplateInvalid) as info:
        registry.resolve(name)
    message = str(info.value)
    assert message.startswith(f"template {name}"), message[:200]
    assert "is invalid" in message and fragment in message, message[:500]
    if line:
        assert f"line {line}:" in message, message[:500]
    assert len(message) < 2000  # a 5,000-digit value is not echoed whole
    assert set(registry.errors()) == {tmp_path / "upload-7.yaml"}
    assert registry.resolve("good@1").ref == "good@1.0.0"  # and it stays that way


def test_every_hostile_file_at_once_leaves_the_good_one_usable(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    for name, (body, _fragment, _line) in HOSTILE.items():
        (tmp_path / f"{name}.yaml").write_text(body)
    registry = TemplateRegistry(tmp_path)
    assert registry.resolve("good").ref == "good@1.0.0"
    assert len(registry.errors()) == len(HOSTILE)
    for name in HOSTILE:
        with pytest.raises(TemplateInvalid, match=f"^template {name}"):
            registry.resolve(name)


def test_nesting_within_the_limits_still_loads() -> None:
    body = "name: ok\nversion: 1.0.0\nsteps:\n  - " + nested_repeats(MAX_REPEAT_NESTING) + "\n"
    loaded = load_template_text(body)
    assert loaded.ref == "ok@1.0.0"
    calver = load_template_text("name: cal\nversion: 20261201.0.0\nsteps:\n  - " + CLICK + "\n")
    assert calver.version == "20261201.0.0"
    big = load_template_text(
        "name: big\nversion: 1.0.0\nparams:\n  n: {type: int, default: " + "9" * 100 + "}\n"
        "steps:\n  - " + CLICK + "\n"
    )
    assert big.template.params["n"].default == int("9" * 100)


def test_a_broken_file_that_names_nothing_is_filed_under_its_file_name(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "orders.yaml").write_text("- [unclosed\n")
    registry = TemplateRegistry(tmp_path)
    with pytest.raises(TemplateInvalid, match=r"^template orders is invalid"):
        registry.resolve("orders")
    assert registry.resolve("good").ref == "good@1.0.0"


def test_a_long_name_is_refused_and_long_references_are_not_echoed(tmp_path: Path) -> None:
    from browserq.errors import TemplateNotFound

    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "long.yaml").write_text(f"name: {'n' * 500}\nversion: 1.0.0\nsteps:\n  - {CLICK}\n")
    registry = TemplateRegistry(tmp_path)
    assert "the limit is 100" in str(registry.errors()[tmp_path / "long.yaml"])
    with pytest.raises(TemplateNotFound, match="the limit is 200") as info:
        registry.resolve("t" * 1_000_000)
    assert len(str(info.value)) < 300
    with pytest.raises(TemplateNotFound, match="invalid template reference"):
        registry.resolve("good\x00")


def test_the_limits_named_here_are_the_code_s() -> None:
    from browserq.templates import checks, loader, source

    assert (source.MAX_DEPTH, checks.MAX_REPEAT_NESTING, loader.MAX_TEMPLATE_BYTES) == (
        MAX_DEPTH,
        MAX_REPEAT_NESTING,
        MAX_TEMPLATE_BYTES,
    )
