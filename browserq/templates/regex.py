"""Every regular expression a template brings is run by RE2: linear time, whatever the pattern.

Template patterns (a param's ``pattern``, ``re:`` URL patterns of ``wait``/``assert``, a
postcondition's ``url_matches``) may come from params, so from whoever submits a run. Python's
``re`` backtracks: ``(a+)+$`` against a long URL holds the worker's event loop — with the GIL —
for minutes, past every timeout. RE2 has no backreferences or lookaround, and in exchange its time
is linear in the input; its memory is capped at compile time. URL globs are translated to a regex
the same way Playwright does, then run by RE2 too (a glob of many ``*`` backtracks as well).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import re2

from browserq.errors import StepFailed
from browserq.templates.interpolate import references, render

#: Prefix that makes a URL pattern a regular expression instead of a glob.
REGEX_PREFIX = "re:"
#: What template regexes cannot use, said in every error about them.
RE2_HINT = "template regexes use RE2 syntax: no backreferences or lookaround"


class RegexError(ValueError):
    """A template pattern RE2 refuses; the message says why (without repeating the pattern)."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    return options


@lru_cache(maxsize=512)
def compile_regex(pattern: str) -> Any:
    """A compiled RE2 pattern (cached); raises RegexError."""
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexError(f"{reason} ({RE2_HINT})") from None
    except (TypeError, ValueError) as exc:  # e.g. a lone surrogate RE2 cannot encode
        raise RegexError(str(exc)) from None


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be compiled (the reason only), or None."""
    try:
        compile_regex(pattern)
    except RegexError as exc:
        return str(exc)
    return None


def fullmatch(pattern: str, text: str) -> bool:
    """``pattern`` matches the whole of ``text`` (param ``pattern:`` checks)."""
    return compile_regex(pattern).fullmatch(text) is not None


def url_pattern_problem(pattern: str) -> str | None:
    """Why a ``wait``/``assert`` URL pattern (``re:…`` or a glob) cannot be used, or None."""
    try:
        url_predicate(pattern)
    except RegexError as exc:
        return str(exc)
    return None


def describe_url_pattern(pattern: str) -> str:
    """How an error names a URL pattern."""
    if pattern.startswith(REGEX_PREFIX):
        return f"invalid regular expression {pattern[len(REGEX_PREFIX):]!r}"
    return f"invalid URL glob {pattern!r}"


def url_predicate(pattern: str) -> Callable[[str], bool]:
    """A URL test for Playwright's ``wait_for_url``: ``re:…`` searches, anything else is a glob.

    Playwright runs a ``re.Pattern`` with Python's backtracking engine on the event loop thread;
    a callable keeps the matching in RE2.
    """
    if pattern.startswith(REGEX_PREFIX):
        compiled = compile_regex(pattern[len(REGEX_PREFIX):])
    else:
        compiled = compile_regex(_glob_regex(pattern))  # Playwright's regex for a glob is RE2-clean

    def matches(url: str) -> bool:
        return compiled.search(url) is not None

    return matches


@lru_cache(maxsize=512)
def _glob_regex(glob: str) -> str:
    """Playwright's own glob → regex translation, so globs mean exactly what Playwright says."""
    from playwright._impl.isomorphic.url_match import resolve_glob_to_regex_pattern

    try:
        return resolve_glob_to_regex_pattern(None, glob)
    except Exception as exc:
        raise RegexError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def step_patterns(step: Any) -> Iterator[tuple[str, str, bool]]:
    """``(field, pattern, is_url_pattern)`` for every pattern field of one action step."""
    action = getattr(step, "action", None)
    url = getattr(step, "url", None)
    if action in ("wait", "assert") and isinstance(url, str):
        yield "url", url, True
    to = getattr(step, "to", None)  # switch_tab's URL pattern (its words are no pattern)
    if action == "switch_tab" and isinstance(to, str) and to not in ("opener", "previous", "first", "last"):
        yield "to", to, True
    when_url = getattr(getattr(step, "when", None), "url", None)  # any step, repeat or block
    if isinstance(when_url, str):
        yield "when.url", when_url, True
    postcondition = getattr(step, "postcondition", None)
    matches = getattr(postcondition, "url_matches", None)
    if isinstance(matches, str):
        yield "postcondition.url_matches", matches, True


def interpolated_pattern_problems(template: Any, params: Mapping[str, Any]) -> list[str]:
    """Problems of the patterns that are built from params, checked as soon as params are known.

    Patterns that also read ``${outputs…}``, ``${loop…}`` or ``${run…}`` can only be checked
    when the step runs (and are, by the same engine).
    """
    secret = {name for name, spec in template.params.items() if spec.type == "secret"}
    problems: list[str] = []
    for index, step in enumerate(template.iter_steps()):
        for field, pattern, _url in step_patterns(step):
            refs = {r.split(".")[0] for r in references(pattern)}
            if not refs or refs & {"outputs", "loop", "run"}:
                continue
            try:
                rendered = str(render(pattern, params))
            except StepFailed:
                continue
            problem = url_pattern_problem(rendered)
            if problem:
                where = getattr(step, "id", None) or f"#{index}"
                shown = f"{pattern!r} is not a valid pattern" if refs & secret else (
                    f"{pattern!r} gives {describe_url_pattern(rendered)}: {problem}"
                )
                what = getattr(step, "action", None) or ("repeat" if hasattr(step, "repeat") else "block")
                problems.append(f"step {where} ({what}) {field}: {shown}")
    return problems
