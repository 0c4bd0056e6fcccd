"""The rules of issue 8, checked by reading ``browserq/`` with :mod:`ast` and by importing it.

Why a test: these rules (no import cycles, small modules and functions, one error tree, layers that
call only downwards, public names that never change) erode one harmless-looking commit at a time;
checked by eye they are not checked at all. Each test prints what breaks a rule and where.

``KNOWN_VIOLATIONS`` lists tolerated exceptions (none today). It may only shrink: a listed
violation that no longer occurs fails the test too.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
import typing
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import browserq
from browserq.errors import BrowserqError, ErrorClass

#: Violations the rules tolerate, one per line as ``"<rule>: <subject>"`` (the key a failing check
#: prints). It can only shrink (a listed violation that no longer occurs fails the test too), so a
#: new exception needs a reason written beside it.
KNOWN_VIOLATIONS: frozenset[str] = frozenset({
    # http.client takes no socket factory in its constructor; this instance attribute is its only
    # seam for connecting to the addresses the egress policy checked (not a hook into browserq).
    "hook-patch: browserq.webhooks.sender.conn._create_connection",
})

PACKAGE_DIR = Path(browserq.__file__).resolve().parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
#: Modules exempt from the module size rule (the bundled demo site is one page of HTML per route).
SIZE_EXEMPT_PREFIXES = ("browserq.demo",)

#: Pinned public surface: changing any of these is a breaking change, not a refactor.
PUBLIC_ALL = [
    "BrokerUnavailable",
    "BrowserqError",
    "CommandFailed",
    "ConfigError",
    "ParamError",
    "RunFailed",
    "Secret",
    "SessionCapacity",
    "SessionClosed",
    "StepFailed",
    "TemplateError",
    "TemplateInvalid",
    "TemplateNotFound",
    "__version__",
    "app",
    "batch_summary",
    "cancel_run",
    "open_session",
    "open_session_async",
    "resolve_run",
    "run_batch",
    "run_template",
]
CLI_COMMANDS = [
    "batch", "beat", "cancel", "db", "db upgrade", "demo", "doctor", "enqueue", "export", "identities",
    "identities add",
    "identities disable", "identities list", "keygen", "live", "locate", "mcp", "proxies", "prune", "report", "resolve", "run",
    "runs",
    "schedules", "schedules list", "schedules validate", "settings", "show",
    "sweep", "templates", "templates list", "templates validate", "webhooks", "webhooks redeliver", "worker",
]
ENV_VARS = [
    "BROWSERQ_ARTIFACTS_DIR", "BROWSERQ_ARTIFACTS_URL", "BROWSERQ_AUTO_MIGRATE", "BROWSERQ_BEAT_LOCK_TTL_S",
    "BROWSERQ_BROKER_HEARTBEAT_S",
    "BROWSERQ_BROKER_URL", "BROWSERQ_BROWSER", "BROWSERQ_BROWSER_MAX_AGE_S", "BROWSERQ_BROWSER_MAX_CONTEXTS",
    "BROWSERQ_BROWSER_MAX_RSS_MB", "BROWSERQ_DRIVER_MAX_BROWSERS", "BROWSERQ_CHECKPOINT_INTERVAL_MS", "BROWSERQ_CHROMIUM_ARGS",
    "BROWSERQ_CHROMIUM_PATH", "BROWSERQ_CONTEXT_PREWARM", "BROWSERQ_DATABASE_URL", "BROWSERQ_HEADLESS", "BROWSERQ_HEADLESS_SHELL_PATH", "BROWSERQ_DRIVER",
    "BROWSERQ_DB_IDLE_IN_TRANSACTION_TIMEOUT_S", "BROWSERQ_DB_LOCK_TIMEOUT_S", "BROWSERQ_DB_STATEMENT_TIMEOUT_S",
    "BROWSERQ_JOURNAL_FLUSH_MS", "BROWSERQ_LEASE_TTL_S", "BROWSERQ_LIMITS_REDIS_URL", "BROWSERQ_LIVE_TOKEN_TTL_S",
    "BROWSERQ_LIVE_VIEW_HOST", "BROWSERQ_LIVE_VIEW_PORT", "BROWSERQ_LIVE_VIEW_PUBLIC_URL", "BROWSERQ_LIVE_VIEW_WHILE_RUNNING", "BROWSERQ_LOG_FORMAT",
    "BROWSERQ_LOG_LEVEL", "BROWSERQ_MAX_DOWNLOAD_BYTES", "BROWSERQ_MAX_FILE_PARAM_BYTES", "BROWSERQ_MAX_HUMAN_WAIT_S",
    "BROWSERQ_MAX_PARAMS_BYTES", "BROWSERQ_MAX_REPEAT", "BROWSERQ_MAX_RUN_ARTIFACT_BYTES", "BROWSERQ_MAX_RUN_DOWNLOAD_BYTES",
    "BROWSERQ_MAX_RUN_OUTPUT_BYTES", "BROWSERQ_MAX_SELECTOR_LENGTH", "BROWSERQ_MAX_STEP_OUTPUT_BYTES",
    "BROWSERQ_MAX_WORKER_LOSSES", "BROWSERQ_MCP_TOKEN", "BROWSERQ_MCP_TOKENS", "BROWSERQ_METRICS_DIR", "BROWSERQ_METRICS_HOST", "BROWSERQ_METRICS_PORT",
    "BROWSERQ_NOTIFY_URL", "BROWSERQ_NO_SANDBOX", "BROWSERQ_PROGRESS_INTERVAL_MS", "BROWSERQ_PROXIES", "BROWSERQ_PROXIES_FILE",
    "BROWSERQ_PROXY_COOLDOWN_MAX_S", "BROWSERQ_PROXY_COOLDOWN_S", "BROWSERQ_PROXY_REDIS_URL",
    "BROWSERQ_PROXY_STICKY_TTL_S", "BROWSERQ_PROXY_STRATEGY", "BROWSERQ_QUEUE", "BROWSERQ_RATE_LIMITS",
    "BROWSERQ_READY_FILE", "BROWSERQ_REQUEUE_AFTER_S", "BROWSERQ_RESULT_BACKEND", "BROWSERQ_RETENTION_S", "BROWSERQ_RUN_RETRIES",
    "BROWSERQ_RUN_RETRY_BACKOFF_MAX_S", "BROWSERQ_RUN_RETRY_BACKOFF_S", "BROWSERQ_RUN_TIME_LIMIT_MARGIN_S",
    "BROWSERQ_S3_ENDPOINT_URL", "BROWSERQ_SCHEDULES_FILE", "BROWSERQ_SECRET_KEY",
    "BROWSERQ_SESSION_CAPACITY_RETRY_S", "BROWSERQ_SESSION_IDLE_TIMEOUT_S", "BROWSERQ_SESSION_MAX_LIFETIME_S",
    "BROWSERQ_SESSION_MAX_PER_FLEET", "BROWSERQ_SESSION_MAX_PER_PROCESS", "BROWSERQ_SESSION_OPEN_TIMEOUT_S",
    "BROWSERQ_SESSION_SIDE_EFFECT_ACTIONS", "BROWSERQ_SNAPSHOT_CONSOLE_LINES",
    "BROWSERQ_SNAPSHOT_NETWORK_ENTRIES", "BROWSERQ_STEALTH", "BROWSERQ_STEP_LOG_LEVEL", "BROWSERQ_STEP_RETRIES",
    "BROWSERQ_STEP_RETRY_DELAY_S", "BROWSERQ_SWEEP_INTERVAL_S", "BROWSERQ_SWEEP_IN_WORKERS", "BROWSERQ_TEMPLATES_DIR",
    "BROWSERQ_TENANT_CAPS", "BROWSERQ_TENANT_SLOT_TTL_S", "BROWSERQ_TENANT_WAIT_S", "BROWSERQ_UPLOADS_DIR", "BROWSERQ_WEBHOOK_ALLOWED_HOSTS", "BROWSERQ_WEBHOOK_ALLOWED_NETWORKS", "BROWSERQ_WEBHOOK_MAX_ATTEMPTS", "BROWSERQ_WEBHOOK_SECRET", "BROWSERQ_WEBHOOK_THREADS", "BROWSERQ_WEBHOOK_TIMEOUT_S",
]
TASK_NAMES = ["browserq.deliver_webhook", "browserq.open_session", "browserq.run_template", "browserq.sweep"]

#: The run's life, top to bottom: a module may import from its own layer and the layers below it.
#: (``templates`` is not in the chain: it is the vocabulary every layer reads, see its own test.)
LAYERS = ("submit", "tasks", "execute", "runner", "actions", "browsers", "journal", "store")


# --- reading browserq/ -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Module:
    name: str  # dotted, a package by its own name (``browserq.store``, not ``browserq.store.__init__``)
    path: Path
    is_package: bool

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def tree(self) -> ast.Module:
        return _parse(self.path)

    @property
    def package(self) -> str:
        """What a relative import of this module is relative to."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class Edge:
    """One import statement that makes ``source`` depend on ``target``."""

    source: str
    target: str
    line: int

    def __str__(self) -> str:
        path = _modules()[self.source].path.relative_to(PACKAGE_DIR.parent)
        return f"{self.source} -> {self.target}  ({path}:{self.line})"


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def _modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportCollector(ast.NodeVisitor):
    """Every import of a browserq module in one module, at any depth (functions and methods
    included), except under ``if TYPE_CHECKING:`` and in the lazy ``__getattr__`` of
    ``browserq/__init__.py``, which exist precisely so that they do not import at load time."""

    def __init__(self, module: Module, modules: dict[str, Module]) -> None:
        self.module = module
        self.modules = modules
        self.edges: list[Edge] = []

    def _add(self, target: str, node: ast.AST) -> None:
        if target in self.modules and target != self.module.name:
            self.edges.append(Edge(self.module.name, target, node.lineno))  # type: ignore[attr-defined]

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        lazy_getattr = self.module.name == "browserq" and node.name == "__getattr__" and node.col_offset == 0
        if not lazy_getattr:
            self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:  # ``import a.b.c`` depends on a.b.c, not on its parents
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.module.package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            # ``from pkg import submodule`` depends on the submodule, ``from pkg import name`` on pkg
            self._add(submodule if submodule in self.modules else base, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        named = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0] if node.args else None
        if named == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
            self._add(first.value, node)
        self.generic_visit(node)


@cache
def _graph() -> dict[str, tuple[Edge, ...]]:
    modules = _modules()
    graph = {}
    for module in modules.values():
        collector = _ImportCollector(module, modules)
        collector.visit(module.tree)
        graph[module.name] = tuple(collector.edges)
    return graph


def _components(graph: Mapping[str, tuple[Edge | PartEdge, ...]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph[node]:
            if edge.target not in index:
                connect(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def _example_cycle(graph: dict[str, tuple[Edge, ...]], component: list[str]) -> list[Edge]:
    """The shortest cycle through the component's first module (what to cut, with file:line)."""
    start, members = component[0], set(component)
    came_by: dict[str, Edge] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for edge in graph[node]:
            if edge.target not in members:
                continue
            if edge.target == start:
                path = [edge]
                while path[0].source != start:
                    path.insert(0, came_by[path[0].source])
                return path
            if edge.target not in came_by:
                came_by[edge.target] = edge
                queue.append(edge.target)
    raise AssertionError(f"no cycle through {start} in {component}")


def _functions(tree: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its dotted name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}.{node.name}", node
            yield from _functions(node, f"{prefix}.{node.name}")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}.{node.name}")
        else:
            yield from _functions(node, prefix)


def _check(rule: str, found: dict[str, str]) -> None:
    """Fail on a violation of ``rule`` not in KNOWN_VIOLATIONS, and on a known one that is gone."""
    new = {key: why for key, why in found.items() if key not in KNOWN_VIOLATIONS}
    gone = sorted(k for k in KNOWN_VIOLATIONS if k.startswith(f"{rule}: ") and k not in found)
    message = []
    if new:
        message.append(f"{len(new)} new violation(s) of rule {rule!r}:")
        message += [f"  {key}\n      {why}" for key, why in sorted(new.items())]
    if gone:
        message.append(
            f"{len(gone)} violation(s) listed in KNOWN_VIOLATIONS no longer occur: delete them "
            "(if one became a smaller violation, e.g. a smaller cycle, list that one instead):"
        )
        message += [f"  {key}" for key in gone]
    assert not message, "\n".join(message)


def _imported_by(prefixes: tuple[str, ...], banned: tuple[str, ...]) -> dict[str, str]:
    """Imports from modules under ``prefixes`` into modules under ``banned``: ``{key: edge}``."""
    within = lambda name, tops: any(name == t or name.startswith(f"{t}.") for t in tops)  # noqa: E731
    return {
        f"import: {edge.source} -> {edge.target}": str(edge)
        for source, edges in _graph().items() if within(source, prefixes)
        for edge in edges if within(edge.target, banned)
    }


def _exists(*names: str) -> bool:
    return all(name in _modules() for name in names)


# --- size and cycles -------------------------------------------------------------------------------
def test_no_import_cycles() -> None:
    graph = _graph()
    found = {}
    for component in _components(graph):
        path = _example_cycle(graph, component)
        found[f"cycle: {', '.join(component)}"] = "e.g.\n        " + "\n        ".join(map(str, path))
    _check("cycle", found)


def _top(name: str) -> str:
    """The top-level part of browserq a module belongs to: its package (``browserq.store.runs`` →
    ``store``) or, for a module directly under browserq/, the module itself (``settings``)."""
    return name.split(".")[1]


@dataclass(frozen=True)
class PartEdge:
    """``source`` part depends on ``target`` part; ``example`` is one module import that makes it so."""

    source: str
    target: str
    example: Edge


def _package_graph() -> dict[str, tuple[PartEdge, ...]]:
    """The import graph between the top-level parts of browserq/ (packages and top-level modules),
    computed from the module imports. ``browserq/__init__.py``, the facade over all of them, is
    left out."""
    found: dict[str, dict[str, Edge]] = defaultdict(dict)
    for source, edges in sorted(_graph().items()):
        if source == "browserq":
            continue
        here = found[_top(source)]  # a part that imports no other part is still a node
        for edge in edges:
            if edge.target != "browserq" and _top(edge.target) != _top(source):
                here.setdefault(_top(edge.target), edge)
    return {part: tuple(PartEdge(part, there, edge) for there, edge in sorted(targets.items()))
            for part, targets in found.items()}


def test_no_package_import_cycles() -> None:
    """No knot between packages either: a helper that a lower part needs (a parser, a set of
    names) lives below both, and a lower part that must tell a higher one something is handed a
    listener (chosen in ``browserq/tasks/observers.py``), it does not import it. (The edge
    ``metrics -> runner``, metrics/observer.py reading runner.events, is in no cycle any more; the
    runner branch moves those events down and removes it.)"""
    graph = _package_graph()
    found = {}
    for component in _components(graph):
        members = set(component)
        why = [f"{e.source} -> {e.target}: e.g. {e.example}" for part in component for e in graph[part]
               if e.target in members]
        found[f"package-cycle: {', '.join(component)}"] = "\n        ".join(why)
    _check("package-cycle", found)


def test_the_package_graph_sees_a_knot() -> None:
    """settings -> limit_specs is an edge between parts; the module graph's own edges are kept as examples."""
    graph = _package_graph()
    assert "limit_specs" in {e.target for e in graph["settings"]}
    assert all(e.example.source.split(".")[1] == part for part, edges in graph.items() for e in edges)
    knot = {"a": (PartEdge("a", "b", Edge("browserq.a", "browserq.b", 1)),),
            "b": (PartEdge("b", "a", Edge("browserq.b", "browserq.a", 1)),), "c": ()}
    assert _components(knot) == [["a", "b"]]


def _edges_of(name: str, source: str, *, is_package: bool = False) -> set[str]:
    module = Module(name, PACKAGE_DIR / "synthetic.py", is_package)
    collector = _ImportCollector(module, _modules())
    collector.visit(ast.parse(source))
    return {edge.target for edge in collector.edges}


def test_the_import_reader_follows_the_rules() -> None:
    """Function-level imports count; TYPE_CHECKING blocks and the lazy ``__getattr__`` of
    ``browserq/__init__.py`` do not; ``from pkg import submodule`` is an edge to the submodule
    only; ``import a.b.c`` is no edge to its parents; relative imports resolve."""
    assert _edges_of("browserq.x", "def f():\n    from browserq import errors\n") == {"browserq.errors"}
    assert _edges_of("browserq.x", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from browserq.store import Store\nelse:\n    import browserq.settings\n") == {
        "browserq.settings"}
    lazy = "def __getattr__(name):\n    from browserq import celery_app\n"
    assert _edges_of("browserq", lazy, is_package=True) == set()
    assert _edges_of("browserq.x", lazy) == {"browserq.celery_app"}
    assert _edges_of("browserq.x", "from browserq.store import models, Store\n") == {
        "browserq.store.models", "browserq.store"}
    assert _edges_of("browserq.x", "import browserq.store.models\n") == {"browserq.store.models"}
    assert _edges_of("browserq.store.views", "from . import models\nfrom ..errors import StoreError\n") == {
        "browserq.store.models", "browserq.errors"}
    assert _edges_of("browserq.store", "from .models import Run\n", is_package=True) == {"browserq.store.models"}
    assert _edges_of("browserq.x", "import importlib\nimportlib.import_module('browserq.guards')\n") == {
        "browserq.guards"}
    assert "browserq.celery_app" not in {edge.target for edge in _graph()["browserq"]}


def test_no_module_over_the_size_limit() -> None:
    found = {}
    for name, module in _modules().items():
        lines = len(module.text.splitlines())
        if lines > MAX_MODULE_LINES and not name.startswith(SIZE_EXEMPT_PREFIXES):
            found[f"module-lines: {name}"] = f"{lines} lines (limit {MAX_MODULE_LINES})"
    _check("module-lines", found)


def test_no_function_over_the_size_limit() -> None:
    found = {}
    for name, module in _modules().items():
        for qualname, node in _functions(module.tree, name):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                where = f"{module.path.relative_to(PACKAGE_DIR.parent)}:{node.lineno}"
                found[f"function-lines: {qualname}"] = f"{lines} lines (limit {MAX_FUNCTION_LINES}) at {where}"
    _check("function-lines", found)


# --- the public surface ----------------------------------------------------------------------------
def test_public_all_is_pinned_and_importable() -> None:
    assert sorted(browserq.__all__) == PUBLIC_ALL
    missing = [name for name in browserq.__all__ if not hasattr(browserq, name)]
    assert not missing, f"browserq.__all__ names {missing} that `from browserq import …` cannot import"


def test_cli_commands_are_pinned() -> None:
    import typer.main

    from browserq.cli import app

    def walk(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield " ".join((*prefix, name))
            yield from walk(sub, (*prefix, name))

    assert sorted(walk(typer.main.get_command(app))) == CLI_COMMANDS


def test_settings_env_vars_are_pinned() -> None:
    from pydantic import AliasChoices, AliasPath

    from browserq.settings import Settings

    prefix = Settings.model_config.get("env_prefix", "")
    names = set()
    for field_name, field in Settings.model_fields.items():
        aliases: list[str] = []
        for alias in (field.validation_alias, field.alias):
            choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
            for choice in choices:
                if isinstance(choice, AliasPath):
                    choice = choice.path[0]
                if isinstance(choice, str):
                    aliases.append(choice)
        # pydantic-settings reads an aliased field from its alias(es) only, without the prefix
        names.update(a.upper() for a in aliases) if aliases else names.add(f"{prefix}{field_name}".upper())
    assert sorted(names) == sorted(ENV_VARS)


def test_celery_task_names_are_pinned() -> None:
    from browserq.celery_app import app

    assert sorted(name for name in app.tasks if not name.startswith("celery.")) == TASK_NAMES


# --- one error tree --------------------------------------------------------------------------------
@cache
def _all_error_classes() -> tuple[type[BrowserqError], ...]:
    """Every BrowserqError subclass browserq defines (each of its modules imported first)."""
    for info in pkgutil.walk_packages(browserq.__path__, "browserq."):
        if info.name.rpartition(".")[2] != "__main__":  # running it is not importing it
            importlib.import_module(info.name)
    found: dict[str, type[BrowserqError]] = {}
    todo = [BrowserqError]
    while todo:
        cls = todo.pop()
        if cls.__module__ == "browserq" or cls.__module__.startswith("browserq."):
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        todo += cls.__subclasses__()
    return tuple(found[name] for name in sorted(found))


def _drawn_tree() -> dict[str, set[str | None]]:
    """The tree at the top of ``browserq/errors.py``'s docstring: ``{class name: drawn parents}``
    (a class with two browserq bases may be drawn under each)."""
    doc = inspect.getdoc(importlib.import_module("browserq.errors")) or ""
    drawn: dict[str, set[str | None]] = defaultdict(set)
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]*[├└]──\s*)?)([A-Z]\w*)\b", line)
        if not match or (not stack and match.group(2) != "BrowserqError") or (stack and "──" not in line):
            continue
        column = len(match.group(1))
        while stack and stack[-1][0] >= column:
            stack.pop()
        drawn[match.group(2)].add(stack[-1][1] if stack else None)
        stack.append((column, match.group(2)))
    return dict(drawn)


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_error_tree_is_drawn_and_parsed() -> None:
    drawn = _drawn_tree()
    assert drawn.get("BrowserqError") == {None}, "the tree must start at BrowserqError"
    assert drawn.get("TemplateNotFound") == {"TemplateError"} and drawn.get("ConfigError") == {"BrowserqError"}


def test_every_error_lives_in_an_errors_module() -> None:
    found = {}
    for cls in _all_error_classes():
        if cls.__module__ != "browserq.errors" and cls.__module__.rpartition(".")[2] != "errors":
            found[f"error-module: {_key(cls)}"] = "define it in browserq/errors.py or browserq/<package>/errors.py"
    _check("error-module", found)


def test_every_error_is_drawn_in_the_tree_under_its_base() -> None:
    drawn = _drawn_tree()
    found, wrong_parent = {}, {}
    for cls in _all_error_classes():
        bases = {b.__name__ for b in cls.__bases__ if issubclass(b, BrowserqError)} or {None}
        if cls.__name__ not in drawn:
            found[f"error-tree: {_key(cls)}"] = f"not drawn in browserq/errors.py (it derives from {sorted(bases)})"
        elif not drawn[cls.__name__] <= bases:
            wrong_parent[f"error-parent: {_key(cls)}"] = (
                f"drawn under {sorted(map(str, drawn[cls.__name__]))}, but derives from {sorted(map(str, bases))}"
            )
    _check("error-tree", found)
    _check("error-parent", wrong_parent)


def test_every_error_carries_a_policy() -> None:
    found = {}
    for cls in _all_error_classes():
        policy = next(vars(k)["policy"] for k in cls.__mro__ if "policy" in vars(k))
        if isinstance(policy, property):  # decided per instance (a StepFailed's is its code's)
            returns = typing.get_type_hints(policy.fget).get("return") if policy.fget else None
            ok = returns is ErrorClass
        else:
            ok = isinstance(policy, ErrorClass)
        if not ok:
            found[f"error-policy: {_key(cls)}"] = f"policy is {policy!r}, not an ErrorClass"
    _check("error-policy", found)


# --- the layers ------------------------------------------------------------------------------------
def _layer_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) < 2:
        return None
    if parts[1] == "store" and len(parts) > 2 and parts[2].startswith("journal"):
        return "journal"  # store/journal.py is the journal, not the store
    top = "journal" if parts[1].startswith("journal") else parts[1]
    return top if top in LAYERS else None


def test_templates_import_no_layer_below_them() -> None:
    """Templates are what to run: every layer reads them, they know nothing of how it is run."""
    banned = (*(f"browserq.{layer}" for layer in LAYERS), "browserq.runtime", "browserq.celery_app", "browserq.cli")
    found = _imported_by(("browserq.templates",), banned)
    assert not found, "\n".join(found.values())


def test_store_imports_nothing_above_it() -> None:
    banned = ("browserq.runner", "browserq.actions", "browserq.execute", "browserq.tasks", "browserq.submit",
              "browserq.cli", "browserq.runtime", "browserq.celery_app")
    store = tuple(name for name in _modules() if name.startswith("browserq.store") and _layer_of(name) == "store")
    found = _imported_by(store, banned)
    assert not found, "the store is the bottom layer:\n" + "\n".join(found.values())


def test_runner_reaches_the_store_only_through_the_journal() -> None:
    journal = [name for name in _modules() if _layer_of(name) == "journal"]
    if not journal:
        pytest.skip("no browserq/journal* module yet (the runner helper's branch adds it)")
    store = tuple(name for name in _modules() if _layer_of(name) == "store")
    found = _imported_by(("browserq.runner",), store)
    assert not found, "the runner records through the journal only:\n" + "\n".join(found.values())


def _names_store(tree: ast.AST) -> Iterator[int]:
    """Lines where ``tree`` imports or names ``Store`` (a name, an attribute, an import alias)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            named = any("Store" in (alias.name.rpartition(".")[2], alias.asname) for alias in node.names)
        elif isinstance(node, ast.Name | ast.Attribute):
            named = (node.id if isinstance(node, ast.Name) else node.attr) == "Store"
        else:  # a string annotation
            named = isinstance(node, ast.Constant) and node.value == "Store"
        if named:
            yield node.lineno


def test_the_runner_never_names_the_store() -> None:
    """Everything the runner keeps goes through the run's journal: no module of browserq/runner/
    imports ``Store`` or names it (not even in an annotation, not through a re-export)."""
    found = {
        f"names-store: {name}:{line}": f"{module.path.relative_to(PACKAGE_DIR.parent)}:{line} names Store"
        for name, module in _modules().items()
        if name == "browserq.runner" or name.startswith("browserq.runner.")
        for line in sorted(set(_names_store(module.tree)))
    }
    assert not found, "the runner records through the journal only:\n" + "\n".join(found.values())


def test_the_store_rule_sees_every_way_to_name_it() -> None:
    """The rule above catches an import, an alias, a name, an attribute and a string annotation."""
    for source in ("from browserq.store import Store", "import browserq.store.Store as S",
                   "from x import Y as Store", "x: Store", "x = store_module.Store", "def f(s: 'Store'): ..."):
        assert list(_names_store(ast.parse(source))), source
    for source in ("from browserq.journal import RunJournal", "x: ArtifactStore", "store = 1"):
        assert not list(_names_store(ast.parse(source))), source


# --- compose, don't inherit -----------------------------------------------------------------------
#: What a class in browserq/store or browserq/runner may subclass: the language's and libraries'
#: kinds of class (typing constructs, enums, the ORM's declarative base and column types, the
#: database driver's connection), the ORM base every model derives from, and exceptions (the
#: project's error tree, the builtins). Never another class of methods: parts are composed.
MIXIN_FREE_PACKAGES = ("browserq.store", "browserq.runner")
ALLOWED_BASES = frozenset({
    "object", "Protocol", "Generic", "NamedTuple", "TypedDict", "Enum", "StrEnum", "IntEnum", "Flag", "IntFlag",
    "DeclarativeBase", "TypeDecorator", "Base",  # the ORM: its declarative base, column types, and our models' base
    "psycopg.Connection",  # store/answering.py: the driver's connection with an answer deadline
})


def _allowed_base(name: str, errors: frozenset[str]) -> bool:
    builtin = getattr(builtins, name, None)
    is_exception = isinstance(builtin, type) and issubclass(builtin, BaseException)
    return name in ALLOWED_BASES or name in errors or is_exception


def _mixin_bases(tree: ast.AST, errors: frozenset[str]) -> Iterator[tuple[int, str, str]]:
    """``(line, class, base)`` for each base of a class in ``tree`` outside the allowlist (a
    subscript counts by its origin: ``Generic[T]`` is ``Generic``)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            origin = base.value if isinstance(base, ast.Subscript) else base
            name = ast.unparse(origin)
            if not _allowed_base(name, errors):
                yield node.lineno, node.name, name


def _error_names() -> frozenset[str]:
    return frozenset(cls.__name__ for cls in (BrowserqError, *_all_error_classes()))


def test_the_mixin_reader_finds_mixins() -> None:
    errors = _error_names()

    def found(source: str) -> list[str]:
        return [f"{cls}({base})" for _, cls, base in _mixin_bases(ast.parse(source), errors)]

    assert found("class Plumbing: ...\nclass RunMethods(Plumbing): ...\n") == ["RunMethods(Plumbing)"]
    assert found("class Store(SchemaMethods, RunMethods): ...\n") == ["Store(SchemaMethods)", "Store(RunMethods)"]
    assert found("class Walker(runner_base.RunnerBase): ...\n") == ["Walker(runner_base.RunnerBase)"]
    allowed = ("class Runs:\n    def __init__(self, db): self.db = db\n"
               "class Run(Base): ...\nclass Lost(StoreError): ...\nclass Bad(ValueError): ...\n"
               "class S(StrEnum): ...\nclass P(Protocol): ...\nclass G(Generic[T]): ...\n"
               "class T(TypedDict): ...\nclass D(TypeDecorator[datetime]): ...\n")
    assert found(allowed) == []


def test_no_mixins_in_the_store_or_the_runner() -> None:
    """The store's repositories and the runner's parts get their collaborators in their
    constructors; none inherits another's methods (they were 13 and 8 mixins over a base)."""
    errors = _error_names()
    found = {
        f"mixin: {name}.{cls}({base})": f"{module.path.relative_to(PACKAGE_DIR.parent)}:{line} {cls} subclasses {base}"
        for name, module in _modules().items()
        if any(name == p or name.startswith(f"{p}.") for p in MIXIN_FREE_PACKAGES)
        for line, cls, base in _mixin_bases(module.tree, errors)
    }
    _check("mixin", found)


def test_actions_reach_the_store_only_through_the_journal() -> None:
    if not _exists("browserq.actions"):
        pytest.skip("no browserq/actions package yet (the runner helper's branch adds it)")
    store = tuple(name for name in _modules() if _layer_of(name) == "store")
    found = _imported_by(("browserq.actions",), store)
    assert not found, "actions record through the step context / journal only:\n" + "\n".join(found.values())


def test_layers_only_call_downwards() -> None:
    """templates → submit → tasks → execute → runner → actions → browsers → journal → store."""
    missing = [layer for layer in LAYERS if not any(_layer_of(name) == layer for name in _modules())]
    if missing:
        pytest.skip(f"layer package(s) {', '.join(missing)} do not exist yet (other helpers' branches add them)")
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    found = []
    for source, edges in _graph().items():
        for edge in edges:
            here, there = _layer_of(source), _layer_of(edge.target)
            if here and there and rank[there] < rank[here]:
                found.append(f"{here} imports {there}: {edge}")
    assert not found, "a layer imports one above it:\n" + "\n".join(sorted(found))


#: What a run must pass to be admitted; only the one door (browserq/execute/admission.py) calls them.
ADMISSION_RULES = ("prepare_run", "prepare_loaded", "check_run_options", "notify_for")


def test_every_run_comes_in_by_the_one_door() -> None:
    """Entry points admit runs with ``execute.admission.admit`` (every limit of the settings), never
    by calling the rules themselves with limits of their own (they drifted when they did)."""
    home = {"browserq.execute.admission", "browserq.execute.accept"}
    found = [
        f"{module.path.relative_to(PACKAGE_DIR.parent)}:{node.lineno} calls {node.func.id}()"
        for name, module in _modules().items() if name not in home
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ADMISSION_RULES
    ]
    assert not found, "admit a run through browserq.execute.admission.admit:\n" + "\n".join(found)


# --- hooks, not patches ----------------------------------------------------------------------------
#: An attribute named like one of these is a way in: whoever wants to be told gets it through the
#: constructor (or the one registration method) of the object that tells, never by assignment.
HOOK_NAME = re.compile(r"(?i)(listener|observer|hook|relay|callback|handler)s?$")
#: The interpreter's own registration points: assignment IS their API.
HOOK_PATCH_ALLOWED = frozenset({"sys.excepthook", "threading.excepthook"})


def _hook_patches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, target)`` of each assignment that hooks into another object: ``obj.<hook name> = …``
    or ``obj.anything = lambda …`` where ``obj`` is not ``self``/``cls``, and
    ``setattr(obj, "<hook name>", …)``. Run state mutated on a helper object is not a hook."""
    for node in ast.walk(tree):
        targets: list[ast.expr]
        value: ast.expr | None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets, value = [node.target], node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and len(node.args) == 3 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and HOOK_NAME.search(node.args[1].value)):
            yield node.lineno, f"setattr({ast.unparse(node.args[0])}, {node.args[1].value!r}, …)"
            continue
        else:
            continue
        for target in targets:
            for attribute in ast.walk(target):
                if not isinstance(attribute, ast.Attribute) or not isinstance(attribute.ctx, ast.Store):
                    continue
                owner = attribute.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                text = ast.unparse(attribute)
                if text in HOOK_PATCH_ALLOWED:
                    continue
                if HOOK_NAME.search(attribute.attr) or isinstance(value, ast.Lambda):
                    yield node.lineno, text


def test_the_hook_patch_reader_finds_patches() -> None:
    def found(source: str) -> list[str]:
        return [target for _, target in _hook_patches(ast.parse(source))]

    assert found("store.webhook_listener = relay\n") == ["store.webhook_listener"]
    assert found("runtime.store.on_done = lambda ids: None\n") == ["runtime.store.on_done"]
    assert found("setattr(pool, 'observer', watcher)\n") == ["setattr(pool, 'observer', …)"]
    assert found("self.listener = listener\ncls.hooks = []\nstate.outputs = {}\nsys.excepthook = f\n") == []


def test_no_object_is_hooked_into_by_assignment() -> None:
    """Listeners, observers and relays come in through a constructor (the store's webhook relay,
    the runtime's observers, the components' metric listeners, all chosen in
    ``browserq/tasks/observers.py``), never by setting an attribute on someone else's instance."""
    found = {
        f"hook-patch: {name}.{target}": f"{module.path.relative_to(PACKAGE_DIR.parent)}:{line}"
        for name, module in _modules().items()
        for line, target in _hook_patches(module.tree)
    }
    _check("hook-patch", found)


def test_measured_parts_are_handed_their_meters() -> None:
    """Only the worker's wiring (``browserq/tasks/``: observers.py chooses the meters, signals.py
    and worker.py run the metrics server's lifecycle) imports ``browserq.metrics``; the pool, the
    limiters, proxies, identities and retention are handed what they report to."""
    everything_else = tuple(sorted({f"browserq.{_top(name)}" for name in _modules() if name != "browserq"}
                                   - {"browserq.metrics", "browserq.tasks"}))
    found = _imported_by(everything_else, ("browserq.metrics",))
    assert not found, "hand the part a meter (browserq/tasks/observers.py) instead:\n" + "\n".join(found.values())


# --- type checking ---------------------------------------------------------------------------------
#: ``# type: ignore`` as mypy reads it, anywhere in a comment.
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore\b")
#: An ignore as the rule wants it: error code(s) in brackets, then a reason in a comment after it:
#: ``# type: ignore[attr-defined]  # playwright's stub lacks X``.
EXPLAINED_IGNORE = re.compile(r"#\s*type:\s*ignore\[[a-z][a-z-]*(?:\s*,\s*[a-z][a-z-]*)*\]\s*#\s*\S")


def _unexplained_ignores(source: str) -> list[tuple[int, str]]:
    """``(line, comment)`` of every ``# type: ignore`` comment in ``source`` that lacks an error
    code or a reason (comments only: a string that spells it is not an ignore)."""
    lines = io.StringIO(source).readline
    return [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(lines)
        if token.type == tokenize.COMMENT and TYPE_IGNORE.search(token.string)
        and not EXPLAINED_IGNORE.search(token.string)
    ]


def test_the_ignore_reader_follows_the_rule() -> None:
    """A code and a reason pass (several codes too); a bare ignore, one without a reason (or an
    empty one) and one without a code do not; strings are not comments."""
    good = [
        "x = f()  # type: ignore[attr-defined]  # playwright's stub lacks X\n",
        "x = f()  # type: ignore[arg-type, union-attr]  # pydantic narrows it at run time\n",
    ]
    bad = [
        "x = f()  # type: ignore\n",
        "x = f()  # type: ignore[attr-defined]\n",
        "x = f()  # type: ignore  # no code\n",
        "x = f()  # type: ignore[attr-defined]  #\n",
    ]
    assert [src for src in good if _unexplained_ignores(src)] == []
    assert [src for src in bad if not _unexplained_ignores(src)] == []
    assert _unexplained_ignores('x = "# type: ignore"\n') == []


def test_every_type_ignore_names_its_code_and_reason() -> None:
    """mypy runs in CI (scripts/test.sh); an ignore silences it, so each one says which error
    (``[code]``: nothing else is silenced with it) and why the checker is wrong there."""
    found = {
        f"type-ignore: {module.path.relative_to(PACKAGE_DIR.parent)}:{line}": comment
        for module in _modules().values()
        for line, comment in _unexplained_ignores(module.text)
    }
    _check("type-ignore", found)
