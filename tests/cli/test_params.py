"""``-p key=value`` as the CLI reads it (``@file``/``@-`` are in tests/secrets/test_redact.py)."""

from __future__ import annotations

import io

import pytest
import typer

from browserq.cli.params import parse_params, undecodable_argument


@pytest.mark.parametrize("pair", ["novalue", "=value", "  =x"])
def test_a_pair_without_a_key_or_an_equals_sign_is_refused(pair: str, capsys) -> None:
    with pytest.raises(typer.Exit) as caught:
        parse_params([pair])
    assert caught.value.exit_code == 2
    assert f"-p expects key=value, got {pair!r}" in capsys.readouterr().err


def test_keys_are_stripped_and_values_kept_as_they_are() -> None:
    assert parse_params([" a =  b ", "c=", "d=e=f"]) == {"a": "  b ", "c": "", "d": "e=f"}


def test_only_one_trailing_newline_is_dropped(tmp_path) -> None:
    path = tmp_path / "v"
    path.write_text("line\n\n")
    params = parse_params([f"a=@{path}", "b=@-"], stdin=io.StringIO("x\r\n"))
    assert params == {"a": "line\n", "b": "x\r"}


def test_undecodable_argument_names_the_first_bad_one() -> None:
    assert undecodable_argument(["runs", "-n", "3"]) is None
    assert undecodable_argument(["ok", "a\udcffb", "\udcfe"]) == r"a\xffb"
