"""The schedules file's shape: every problem is one line naming the file, the entry's line, the
entry and what is wrong; one bad entry never hides the others."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from browserq.schedules import EnvRef, FileRef, read_schedules
from browserq.schedules.load import Loaded, parse_schedules


def parse(body: str) -> Loaded:
    return parse_schedules(textwrap.dedent(body), Loaded("s.yaml"))


def problems(body: str) -> list[str]:
    return [str(p) for p in parse(body).problems]


def test_a_valid_file_parses_every_field() -> None:
    loaded = parse("""
        schedules:
          - name: quotes-5m
            template: quotes@1.2
            params: {start_url: "http://127.0.0.1/", max_pages: 2}
            every: 5m
          - name: nightly
            template: login_form
            params: {password: {env: LOGIN_PW}, base_url: {file: /run/secrets/url}}
            cron: "30 2 * * 1-5"
            timezone: Europe/Berlin
            queue: tenant-a
            enabled: false
    """)
    assert loaded.problems == []
    first, second = loaded.schedules
    assert (first.name, first.template, first.every, first.enabled) == ("quotes-5m", "quotes@1.2", "5m", True)
    assert first.timing.interval_s == 300 and first.timing.text == "every 5m"
    assert second.params == {"password": EnvRef(env="LOGIN_PW"), "base_url": FileRef(file=Path("/run/secrets/url"))}
    assert second.timing.zone_name == "Europe/Berlin" and first.timing.zone_name == "UTC" and second.timing.text == "cron 30 2 * * 1-5"
    assert (second.queue, second.enabled) == ("tenant-a", False)
    assert loaded.lines == {"quotes-5m": 3, "nightly": 7}


@pytest.mark.parametrize(("entry", "expected"), [
    ("{name: a, template: t, every: 5m, evry: 3}",
     "s.yaml: line 3: schedule 'a': unknown field 'evry' (an entry has: name, template, params, every, cron, timezone, queue, enabled)"),
    ("{name: a, every: 5m}", "s.yaml: line 3: schedule 'a': 'template' is required"),
    ("{template: t, every: 5m}", "s.yaml: line 3: entry 1: 'name' is required"),
    ("{name: a, template: t}",
     "s.yaml: line 3: schedule 'a': give exactly one of 'every' (e.g. 5m) and 'cron' (e.g. \"*/5 * * * *\")"),
    ("{name: a, template: t, every: 5m, cron: '* * * * *'}",
     "s.yaml: line 3: schedule 'a': give exactly one of 'every' (e.g. 5m) and 'cron' (e.g. \"*/5 * * * *\")"),
    ("{name: a, template: t, every: 5x}",
     "s.yaml: line 3: schedule 'a': every: '5x' is not an interval: a whole number > 0 and a unit s/m/h/d, e.g. 30s or 5m"),
    ("{name: a, template: t, every: 0s}", "s.yaml: line 3: schedule 'a': every: '0s' is not an interval"),
    ("{name: a, template: t, every: 99999999999999d}",
     "s.yaml: line 3: schedule 'a': every: '99999999999999d' is longer than 366d; use a cron line for rarer runs"),
    ("{name: a, template: t, every: 30}", "s.yaml: line 3: schedule 'a': every: Input should be a valid string"),
    ("{name: a, template: t, cron: '61 * * * *'}",
     "s.yaml: line 3: schedule 'a': cron '61 * * * *' is not valid (minute hour day-of-month month day-of-week): Invalid end range: 61 > 59."),
    ("{name: a, template: t, cron: '* * * *'}",
     "s.yaml: line 3: schedule 'a': cron '* * * *' must have 5 fields (minute hour day-of-month month day-of-week)"),
    ("{name: a, template: t, cron: '0 0 31 2 *'}", "s.yaml: line 3: schedule 'a': cron '0 0 31 2 *' is not valid"),
    ("{name: a, template: t, cron: '0 * * * *', timezone: Mars/Olympus}",
     "s.yaml: line 3: schedule 'a': timezone: unknown timezone 'Mars/Olympus' (an IANA name like Europe/Berlin or UTC)"),
    ("{name: a, template: t, every: 5m, timezone: UTC}",
     "s.yaml: line 3: schedule 'a': 'timezone' applies to 'cron' only"),
    ("{name: a, template: t, every: 5m, params: {password: {value: hunter22}}}",
     "s.yaml: line 3: schedule 'a': params.password: a mapping must be a reference, {env: VAR} or {file: /path} (got keys: value)"),
    ("{name: a, template: t, every: 5m, params: {password: {env: 'not a name'}}}",
     "s.yaml: line 3: schedule 'a': params.password: {env: …} needs an environment variable name"),
    ("{name: a, template: t, every: 5m, params: [1]}",
     "s.yaml: line 3: schedule 'a': params: Input should be a valid dictionary"),
    ("{name: 'a b', template: t, every: 5m}", "s.yaml: line 3: entry 1: name: 'a b' is not a schedule name"),
    ("{name: off, template: t, every: 5m}",
     "s.yaml: line 3: entry 1: name: Input should be a valid string (YAML reads a bare yes/no/on/off/true/false as a boolean: quote it)"),
    ("{name: a, template: t, every: 5m, enabled: 'maybe'}", "s.yaml: line 3: schedule 'a': enabled: Input should be a valid boolean"),
    ("{name: a, template: t, every: 5m, queue: 'a queue'}",
     "s.yaml: line 3: schedule 'a': queue: queue 'a queue' must be letters, digits and _ . : @ -"),
    ("{name: a, template: t, every: 5m, queue: amq.direct}", "s.yaml: line 3: schedule 'a': queue: queue 'amq.direct' must be"),
    ("just-a-string", "s.yaml: line 3: entry 1: must be a mapping (name, template, params, every, cron, timezone, queue, enabled)"),
])
def test_each_problem_names_the_entry_and_what_is_wrong(entry: str, expected: str) -> None:
    found = problems(f"\nschedules:\n  - {entry}\n")
    assert len(found) == 1, found
    assert found[0].startswith(expected), found[0]


def test_an_inline_value_is_never_echoed_in_a_problem() -> None:
    found = problems("""
        schedules:
          - {name: a, template: t, every: 5m, params: {password: {value: hunter22-secret}}}
          - {name: b, template: t, every: 5m, enabled: hunter22-secret}
    """)
    assert len(found) == 2 and all("hunter22" not in p for p in found), found


def test_every_bad_entry_is_reported_and_the_good_ones_still_parse() -> None:
    loaded = parse("""
        schedules:
          - {name: good, template: t, every: 1h}
          - name: bad
            template: t
            every: soon
            cron: nope nope
          - {name: good, template: t, every: 2h}
          - {name: also-good, template: t, cron: "0 3 * * *"}
    """)
    assert [s.name for s in loaded.schedules] == ["good", "also-good"]
    assert [str(p) for p in loaded.problems] == [
        "s.yaml: line 4: schedule 'bad': every: 'soon' is not an interval: a whole number > 0 and a unit s/m/h/d, e.g. 30s or 5m",
        "s.yaml: line 8: schedule 'good': the name is also used by the entry at line 3; names must be unique "
        "(each slot's run is keyed by it)",
    ]


@pytest.mark.parametrize(("text", "expected"), [
    ("schedules: [\n", "s.yaml: line 2: not valid YAML"),
    ("- {name: a}\n", "s.yaml: must be a mapping with one key, 'schedules': a list of entries"),
    ("schedule: []\n", "s.yaml: unknown top-level key 'schedule'; the file has one key, 'schedules'"),
    ("schedules: {name: a}\n", "s.yaml: 'schedules' must be a list of entries"),
])
def test_a_file_of_the_wrong_shape_says_so(text: str, expected: str) -> None:
    found = [str(p) for p in parse_schedules(text, Loaded("s.yaml")).problems]
    assert len(found) == 1 and found[0].startswith(expected), found


def test_an_empty_file_has_no_schedules_and_no_problems(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("# nothing scheduled yet\n")
    loaded = read_schedules(tmp_path / "empty.yaml")
    assert loaded.schedules == [] and loaded.problems == []
    missing = read_schedules(tmp_path / "missing.yaml")
    assert [str(p) for p in missing.problems] == [
        f"{tmp_path / 'missing.yaml'}: no such file (set BROWSERQ_SCHEDULES_FILE to the YAML file of schedules)"]
