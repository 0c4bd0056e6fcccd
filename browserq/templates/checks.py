"""Whole-template rules a per-field schema cannot express.

They run on the raw YAML data, tolerating shapes the schema rejects, so one load reports schema
problems and these together: duplicate step ids, ``${...}`` that refer to nothing, literal URLs
outside http(s)/``allowed_domains``, screenshot names escaping the artifact folder, over-long
selectors, unbounded repeats, ``eval`` without ``allow_eval`` and conditions that read a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from browserq.errors import Codes, StepFailed
from browserq.guards import artifact_name_problem, check_url
from browserq.templates.conditions import expression_refs
from browserq.templates.file_params import FILE_VALUE_KEYS
from browserq.templates.file_steps import upload_path_problems
from browserq.templates.interpolate import NOT_INTERPOLATED, MalformedReference, Ref, parse
from browserq.templates.locators import REF_IN_TEMPLATE, selector_length, session_only_problem
from browserq.templates.messages import did_you_mean
from browserq.templates.regex import describe_url_pattern, url_pattern_problem
from browserq.templates.source import Location, NodeIndex, Problem, format_location

#: Any ``${...}`` in a condition's text, even inside a string literal of an ``if`` expression.
_ANY_REF = re.compile(r"\$\{\s*([^}]*?)\s*\}")
_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]*):")
_AUTHORITY_DONE = re.compile(r"^\s*https?://[^/?#\\]+[/?#\\]", re.IGNORECASE)
SELECTOR_KEYS = ("selector", "within", "until_missing", "while_present")
LOOP_VARIABLES = ("index", "iteration")
RUN_VARIABLES = ("id", "attempt")
#: Repeats inside repeats, at most this deep: each level multiplies the work and the recursion.
MAX_REPEAT_NESTING = 8
#: Blocks and repeats inside each other, at most this deep (the recursion of loading and running).
MAX_STEP_NESTING = 16


def _literal(text: str) -> str | None:
    """``text`` with escapes undone, or None if it holds a reference (or a malformed one)."""
    try:
        pieces = parse(text)
    except MalformedReference:
        return None
    if any(isinstance(p, Ref) for p in pieces):
        return None
    return "".join(p for p in pieces if isinstance(p, str))


class TemplateChecker:
    """Walks one template's raw data in document order, collecting problems."""

    def __init__(
        self,
        data: Mapping[str, Any],
        index: NodeIndex,
        *,
        max_selector_length: int,
        max_repeat: int,
    ) -> None:
        self.data = data
        self.index = index
        self.max_selector_length = max_selector_length
        self.max_repeat = max_repeat
        self.problems: list[Problem] = []
        params = data.get("params")
        self.params: dict[str, dict[str, Any]] = {
            name: (spec if isinstance(spec, dict) else {})
            for name, spec in (params.items() if isinstance(params, dict) else [])
            if isinstance(name, str)
        }
        settings = data.get("settings")
        settings = settings if isinstance(settings, dict) else {}
        domains = settings.get("allowed_domains")
        self.allowed_domains = (
            [d for d in domains if isinstance(d, str)] if isinstance(domains, list) else []
        )
        self.allow_eval = settings.get("allow_eval") is True
        self.produced: list[str] = []
        self.seen_ids: dict[str, Location] = {}

    def add(self, loc: Location, message: str) -> None:
        located, line = self.index.locate(loc)
        self.problems.append(Problem(line, format_location(located), message))

    # --- entry point ---------------------------------------------------------------------
    def run(self) -> list[Problem]:
        self._check_param_urls()
        steps = self.data.get("steps")
        if isinstance(steps, list):
            self._steps(steps, ("steps",), in_repeat=False)
        return self.problems

    def _check_param_urls(self) -> None:
        for name, spec in self.params.items():
            default = spec.get("default")
            if spec.get("type") == "url" and isinstance(default, str):
                try:
                    check_url(default, self.allowed_domains)
                except StepFailed as exc:
                    if exc.code is Codes.DOMAIN_DENIED:  # bad schemes are the ParamSpec's to report
                        self.add(("params", name, "default"), f"default URL: {exc.message}")

    # --- steps ---------------------------------------------------------------------------
    def _steps(self, steps: list[Any], loc: Location, *, in_repeat: bool) -> None:
        for i, step in enumerate(steps):
            if isinstance(step, dict):
                self._step(step, (*loc, i), in_repeat=in_repeat)

    def _step(self, step: dict[str, Any], loc: Location, *, in_repeat: bool) -> None:
        self._check_id(step.get("id"), loc)
        self._when(step.get("when"), (*loc, "when"), in_repeat=in_repeat)  # before its own into
        if "repeat" in step:
            self._repeat(step["repeat"], (*loc, "repeat"), in_repeat=in_repeat)
            return
        if "steps" in step:  # a block
            if loc.count("steps") > MAX_STEP_NESTING:
                self.add(loc, f"blocks and repeats nest more than {MAX_STEP_NESTING} deep; flatten them")
            elif isinstance(step["steps"], list):
                self._steps(step["steps"], (*loc, "steps"), in_repeat=in_repeat)
            return
        for key, value in step.items():
            if key not in NOT_INTERPOLATED:
                self._refs(value, (*loc, key), in_repeat=in_repeat)
        if "ref" in step:
            self.add((*loc, "ref"), REF_IN_TEMPLATE)
        for key in SELECTOR_KEYS:
            self._selector(step.get(key), (*loc, key))
        fields = step.get("fields")
        if isinstance(fields, dict):
            for name, field in fields.items():
                if isinstance(field, dict):
                    self._selector(field.get("selector"), (*loc, "fields", name, "selector"))
                else:
                    self._selector(field, (*loc, "fields", name))
        action = step.get("action")
        if action in ("navigate", "download", "new_tab") and isinstance(step.get("url"), str):
            self._navigate_url(step["url"], (*loc, "url"))
        if action == "upload":
            for where, problem in upload_path_problems(step, _literal):
                self.add((*loc, *where), problem)
        if action == "screenshot" and isinstance(step.get("name"), str):
            shot = _literal(step["name"])
            refused = artifact_name_problem(shot) if shot is not None else None
            if refused:
                self.add((*loc, "name"), refused)
        if action in ("wait", "assert") and isinstance(step.get("url"), str):
            self._url_pattern(step["url"], (*loc, "url"))
        postcondition = step.get("postcondition")
        if isinstance(postcondition, dict) and isinstance(postcondition.get("url_matches"), str):
            self._url_pattern(postcondition["url_matches"], (*loc, "postcondition", "url_matches"))
        if action == "eval" and not self.allow_eval:
            self.add(
                loc, "eval steps are disabled; set settings.allow_eval: true to run JavaScript"
            )
        into = step.get("into")
        if isinstance(into, str):
            self.produced.append(into)

    def _when(self, when: Any, loc: Location, *, in_repeat: bool) -> None:
        """A condition's selector and URL pattern like any other; its expression's references
        against the params and the outputs that steps before this one store."""
        if not isinstance(when, dict):
            return
        for key in ("present", "absent", "url"):
            self._refs(when.get(key), (*loc, key), in_repeat=in_repeat)
            if key != "url":
                self._selector(when.get(key), (*loc, key))
            elif isinstance(when.get(key), str):
                self._url_pattern(when[key], (*loc, key))
            self._no_secret(when.get(key), (*loc, key))
        if isinstance(when.get("if"), str):
            refs = expression_refs(when["if"])  # none when it does not parse: the schema says why
            for ref in refs:
                problem = self._ref_problem(ref, in_repeat=in_repeat)
                if problem:
                    self.add((*loc, "if"), problem)
            self._no_secret(when["if"], (*loc, "if"), refs)

    def _no_secret(self, value: Any, loc: Location, refs: list[Ref] | None = None) -> None:
        """A condition may not read a secret param: whether the step ran is recorded (a skip
        with its reason), so ``password < 'M'`` would spell the secret out, one guess per run.
        Every way of naming it counts: ``password``/``params.password`` in an expression, and
        ``${password}`` anywhere in the condition's text (a selector, a URL, a string literal)."""
        names = [ref.parts[0] for ref in refs or []]
        for text in _strings(value):
            found = _ANY_REF.finditer(text)
            names += [m.group(1).removeprefix("params.").split(".")[0] for m in found]
        for name in dict.fromkeys(names):
            if self.params.get(name, {}).get("type") == "secret":
                self.add(
                    loc,
                    f"a condition may not read secret param '{name}': whether the step "
                    "runs is recorded, which would tell the secret; decide on a param that "
                    "is not secret, or an output",
                )

    def _check_id(self, step_id: Any, loc: Location) -> None:
        if not isinstance(step_id, str):
            return
        first = self.seen_ids.get(step_id)
        if first is None:
            self.seen_ids[step_id] = loc
            return
        where = f"{format_location(first)}, line {self.index.line(first)}"
        self.add((*loc, "id"), f"duplicate step id '{step_id}' (also used at {where})")

    def _repeat(self, spec: Any, loc: Location, *, in_repeat: bool) -> None:
        if not isinstance(spec, dict):
            return
        if loc.count("repeat") > MAX_REPEAT_NESTING:
            self.add(
                loc,
                f"repeats nest more than {MAX_REPEAT_NESTING} deep; flatten the loops "
                "(each level multiplies the work)",
            )
            return
        if "max" in spec:
            self._repeat_max(spec["max"], (*loc, "max"))
        for key in ("until_missing", "while_present"):
            self._selector(spec.get(key), (*loc, key))
            self._refs(spec.get(key), (*loc, key), in_repeat=True)
            self._no_secret(spec.get(key), (*loc, key))  # the passes run would tell it
        if isinstance(spec.get("steps"), list):
            self._steps(spec["steps"], (*loc, "steps"), in_repeat=True)

    def _repeat_max(self, value: Any, loc: Location) -> None:
        limit = self.max_repeat
        if isinstance(value, bool):
            return  # the schema reports the wrong type
        if isinstance(value, int):
            if value < 1:
                self.add(loc, f"repeat max must be at least 1, got {value}")
            elif value > limit:
                self.add(loc, f"repeat max {value} is above the limit {limit} (max_repeat)")
            return
        if not isinstance(value, str):
            return
        try:
            pieces = parse(value)
        except MalformedReference as exc:
            self.add(loc, str(exc))
            return
        ref = pieces[0] if len(pieces) == 1 else None
        if not isinstance(ref, Ref) or len(ref.parts) != 1:
            self.add(
                loc,
                f"repeat max {value!r} is unbounded: it must be an integer 1..{limit} or exactly "
                "${param} of an int param that declares a max",
            )
            return
        name = ref.name
        spec = self.params.get(name)
        if spec is None:
            self.add(
                loc,
                f"repeat max ${{{name}}} is unbounded: there is no param '{name}'"
                f"{did_you_mean(name, self.params)}",
            )
        elif spec.get("type") != "int":
            self.add(
                loc,
                f"repeat max ${{{name}}} is unbounded: param '{name}' is "
                f"{spec.get('type')!r}, not int",
            )
        elif not isinstance(spec.get("max"), int | float) or isinstance(spec.get("max"), bool):
            self.add(
                loc,
                f"repeat max ${{{name}}} is unbounded: param '{name}' declares no max "
                f"(add max: N with N <= {limit})",
            )
        elif spec["max"] > limit:
            self.add(
                loc,
                f"repeat max ${{{name}}} is unbounded: param '{name}' allows up to "
                f"{spec['max']}, above the limit {limit} (max_repeat)",
            )

    # --- single values -------------------------------------------------------------------
    def _selector(self, value: Any, loc: Location) -> None:
        if (session_only := session_only_problem(value)) is not None:
            self.add(loc, session_only)
        length = selector_length(value)  # a locator mapping: its readable form's length
        if length is not None and length > self.max_selector_length:
            self.add(
                loc,
                f"selector is {length} characters long; the limit is "
                f"{self.max_selector_length} (max_selector_length)",
            )

    def _navigate_url(self, url: str, loc: Location) -> None:
        literal = _literal(url)
        if literal is None:
            # Partly dynamic: judge what is already fixed (the scheme, and the host if complete).
            prefix = url.split("${", 1)[0]
            scheme = _SCHEME.match(prefix)
            if (
                (scheme
                and scheme.group(1).lower() not in ("http", "https"))
                or _AUTHORITY_DONE.match(prefix)
            ):
                literal = prefix
            else:
                return
        try:
            check_url(literal, self.allowed_domains)
        except StepFailed as exc:
            self.add(loc, exc.message)

    def _url_pattern(self, pattern: str, loc: Location) -> None:
        """A literal URL pattern (``re:…`` or a glob) must compile in RE2, the engine that runs it."""
        literal = _literal(pattern)
        if literal is not None:
            problem = url_pattern_problem(literal)
            if problem:
                self.add(loc, f"{describe_url_pattern(literal)}: {problem}")

    def _refs(self, value: Any, loc: Location, *, in_repeat: bool) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                self._refs(item, (*loc, key), in_repeat=in_repeat)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self._refs(item, (*loc, i), in_repeat=in_repeat)
        elif isinstance(value, str) and "${" in value:
            try:
                pieces = parse(value)
            except MalformedReference as exc:
                self.add(loc, str(exc))
                return
            for piece in pieces:
                if isinstance(piece, Ref):
                    problem = self._ref_problem(piece, in_repeat=in_repeat)
                    if problem:
                        self.add(loc, problem)

    def _ref_problem(self, ref: Ref, *, in_repeat: bool) -> str | None:
        parts = ref.parts
        head, shown = parts[0], f"${{{ref.name}}}"
        if head == "outputs":
            if len(parts) < 2:
                return f"{shown} needs an output name: ${{outputs.NAME}}"
            if parts[1] not in self.produced:
                earlier = ", ".join(dict.fromkeys(self.produced)) or "none"
                return (
                    f"{shown} refers to nothing: no earlier step stores into '{parts[1]}' "
                    f"(earlier outputs: {earlier}){did_you_mean(parts[1], self.produced)}"
                )
            return None
        if head == "loop":
            if not in_repeat:
                return f"{shown} can only be used inside a repeat"
            if len(parts) != 2 or parts[1] not in LOOP_VARIABLES:
                return f"{shown} is not a loop variable; use ${{loop.index}} or ${{loop.iteration}}"
            return None
        if head == "run":
            if len(parts) == 2 and parts[1] in RUN_VARIABLES:
                return None
            return f"{shown} is unknown; use ${{run.id}} or ${{run.attempt}}"
        if head not in self.params:
            declared = ", ".join(self.params) or "none"
            return (
                f"{shown} refers to nothing: '{head}' is not a declared param "
                f"(declared: {declared}){did_you_mean(head, self.params)}"
            )
        kind = self.params[head].get("type")
        if kind == "file" and len(parts) == 2 and parts[1] in FILE_VALUE_KEYS:
            return None  # ${cv.filename}: a file param's value is its reference
        if len(parts) > 1 and (kind != "list" or len(parts) > 2 or not parts[1].isdigit()):
            return f"{shown} reads into param '{head}' ({kind}), which has no such part"
        return None


def _strings(value: Any) -> list[str]:
    """Every string inside a condition's value (a locator mapping holds several)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def check_template(
    data: Mapping[str, Any], index: NodeIndex, *, max_selector_length: int, max_repeat: int
) -> list[Problem]:
    """Every whole-template problem in ``data`` (the loaded YAML), located via ``index``."""
    checker = TemplateChecker(
        data, index, max_selector_length=max_selector_length, max_repeat=max_repeat
    )
    return checker.run()
