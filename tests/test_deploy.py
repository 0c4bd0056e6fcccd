"""The container files, checked by parsing: Dockerfile, docker-compose.yml, constraints.txt,
.dockerignore and schedules.example.yml.

Why a test: no Docker engine runs where the tests do, and these files break silently — a setting
renamed in browserq/settings.py, a dependency added to pyproject.toml but not pinned, a service
that starts before the database it needs. Each check names the file and what to fix.

Run as a script to regenerate constraints.txt from this (tested) environment:

    .venv/bin/python tests/test_deploy.py > constraints.txt
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from browserq.secrets import SecretBox, generate_key
from browserq.settings import Settings
from browserq.templates import TemplateRegistry

ROOT = Path(__file__).resolve().parent.parent
BROWSERQ_IMAGE = "browserq:local"
#: Services built from this repository that read or write the run store, and the one that does not.
DB_SERVICES = {"migrate", "worker", "human", "beat"}
NO_DB_SERVICES = {"flower"}
#: BROWSERQ_* variables that are not Settings fields but are read by browserq.settings.
NON_FIELD_VARS = {"BROWSERQ_SETTINGS_FILE"}
#: Extras the image installs (the Dockerfile's `pip install ".[flower,s3]"`).
IMAGE_EXTRAS = ("flower", "s3")
CONSTRAINTS_HEADER = """\
# Exact versions of every runtime dependency of browserq[flower,s3], as installed in the tested
# .venv. The Dockerfile installs these (-r) and then browserq against them (-c).
# Regenerate after changing dependencies: .venv/bin/python tests/test_deploy.py > constraints.txt
"""


# --- readers ----------------------------------------------------------------------------------
@cache
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def browserq_services() -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in services().items() if svc.get("image") == BROWSERQ_IMAGE}


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): str(v) for k, v in env.items()}


def mounts(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(type, source, target) of every volume entry, short or long syntax."""
    found = []
    for entry in service.get("volumes") or []:
        if isinstance(entry, str):
            source, target = entry.split(":")[:2]
            kind = "bind" if source.startswith((".", "/", "~")) else "volume"
            found.append((kind, source, target))
        else:
            found.append((entry["type"], entry.get("source", ""), entry["target"]))
    return found


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return dict.fromkeys(deps, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


@cache
def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending += " " + line.removesuffix("\\").strip()
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            instructions.append((word.upper(), rest.strip()))
            pending = ""
    return instructions


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, args in dockerfile():
        if word == "ENV":
            env.update(re.findall(r"(\w+)=(\S+)", args))
    return env


def pins(path: Path = ROOT / "constraints.txt") -> dict[str, str]:
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not pinned with =="
            found[canonicalize_name(name)] = version.strip()
    return found


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def runtime_requirements() -> list[Requirement]:
    optional = project()["optional-dependencies"]
    raw = list(project()["dependencies"]) + [r for extra in IMAGE_EXTRAS for r in optional[extra]]
    return [Requirement(r) for r in raw]


def runtime_closure() -> dict[str, str]:
    """name -> installed version of every distribution the image's browserq needs, transitively:
    pyproject.toml's requirements (not the installed browserq's metadata, which an editable
    install leaves stale), then each installed distribution's own."""
    found: dict[str, str] = {}
    todo = runtime_requirements()
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise AssertionError(
                f"{req.name} (needed by the image) is not installed in this environment: "
                "./scripts/bootstrap.sh, or .venv/bin/pip install -e '.[dev]'"
            ) from None
        found[key[0]] = dist.version
        markers = [{"extra": e} for e in req.extras] or [{"extra": ""}]
        for raw in dist.requires or []:
            dep = Requirement(raw)
            if dep.marker is None or any(dep.marker.evaluate(m) for m in markers):
                todo.append(dep)
    return found


def render_constraints() -> str:
    return CONSTRAINTS_HEADER + "".join(f"{n}=={v}\n" for n, v in sorted(runtime_closure().items()))


# --- docker-compose.yml -----------------------------------------------------------------------
def test_compose_has_every_service() -> None:
    expected = {"postgres", "redis", "minio", "createbuckets", "migrate", "worker", "beat", "flower"}
    missing = expected - set(services())
    assert not missing, f"docker-compose.yml lacks the service(s) {sorted(missing)}"
    classified = DB_SERVICES | NO_DB_SERVICES
    assert set(browserq_services()) == classified, (
        f"browserq services {sorted(browserq_services())} != {sorted(classified)}: classify a new one "
        "in DB_SERVICES or NO_DB_SERVICES (tests/test_deploy.py)"
    )


def test_every_browserq_variable_is_a_setting() -> None:
    fields = set(Settings.model_fields)
    sources = {f"compose {name}": environment(svc) for name, svc in services().items()}
    sources["Dockerfile ENV"] = dockerfile_env()
    unknown = [
        f"{where}: {key}"
        for where, env in sources.items()
        for key in env
        if key.startswith("BROWSERQ_") and key not in NON_FIELD_VARS
        and key.removeprefix("BROWSERQ_").lower() not in fields
    ]
    assert not unknown, f"not a browserq setting (see browserq/settings.py): {unknown}"


def test_services_wait_for_what_they_use() -> None:
    problems = []
    for name, svc in browserq_services().items():
        deps = depends_on(svc)
        want = {"redis": "service_healthy"} if name in NO_DB_SERVICES else {"postgres": "service_healthy"}
        if name in DB_SERVICES - {"migrate"}:
            want |= {"redis": "service_healthy", "migrate": "service_completed_successfully"}
        problems += [f"{name} must depend on {d} ({c})" for d, c in want.items() if deps.get(d) != c]
    worker_deps = depends_on(services()["worker"])
    if worker_deps.get("createbuckets") != "service_completed_successfully":
        problems.append("worker must depend on createbuckets (service_completed_successfully)")
    if depends_on(services()["createbuckets"]).get("minio") != "service_healthy":
        problems.append("createbuckets must depend on minio (service_healthy)")
    assert not problems, problems
    for name in ("postgres", "redis", "minio"):
        assert services()[name].get("healthcheck", {}).get("test"), f"{name} needs a healthcheck"


def test_only_the_migrate_service_migrates() -> None:
    for name, svc in browserq_services().items():
        if name in DB_SERVICES:
            assert environment(svc).get("BROWSERQ_AUTO_MIGRATE") == "false", name
    assert services()["migrate"]["command"] == ["db", "upgrade"]
    assert services()["migrate"]["restart"] == "no"


def test_one_beat_with_templates_and_schedules() -> None:
    beat = services()["beat"]
    assert beat["deploy"]["replicas"] == 1 and "scale" not in beat, "exactly one beat"
    env = environment(beat)
    target = env.get("BROWSERQ_SCHEDULES_FILE")
    assert target == "/app/schedules.yml"
    binds = {(src, dst) for kind, src, dst in mounts(beat) if kind == "bind"}
    assert ("./templates", env["BROWSERQ_TEMPLATES_DIR"]) in binds, "beat must mount ./templates"
    assert ("./schedules.yml", target) in binds, "beat must mount ./schedules.yml"
    assert beat["command"][0] == "beat"


def test_workers_are_limited_and_healthy_when_ready() -> None:
    worker = services()["worker"]
    assert worker["deploy"]["replicas"] == 2
    limits = worker["deploy"]["resources"]["limits"]
    assert limits.get("memory") and limits.get("cpus"), "workers need memory and cpu limits"
    assert worker.get("init") is True, "init: true reaps Chromium's orphaned helpers"
    assert worker.get("shm_size"), "Chromium needs more than Docker's 64 MB /dev/shm"
    ready = environment(worker).get("BROWSERQ_READY_FILE")
    assert ready, "the worker must set BROWSERQ_READY_FILE"
    assert worker["healthcheck"]["test"] == ["CMD", "test", "-f", ready]
    tmpfs = [t.split(":")[0] for t in worker.get("tmpfs") or []]
    assert str(Path(ready).parent) in tmpfs, "the ready file must not survive a restart: tmpfs"
    assert "--disable-dev-shm-usage" in Settings().chromium_launch_args()


def test_worker_metrics_port_is_exposed() -> None:
    worker = services()["worker"]
    port = environment(worker).get("BROWSERQ_METRICS_PORT")
    assert port and port in [str(p) for p in worker.get("expose") or []]
    # a Prometheus container scrapes it: not the loopback default, which only the container reaches
    assert environment(worker).get("BROWSERQ_METRICS_HOST") == "0.0.0.0"


def interpolated(value: str, dotenv: dict[str, str] | None = None) -> str:
    """``value`` as Compose reads it with ``dotenv`` as the .env: ``${VAR:-default}`` and
    ``${VAR:?error}`` (a required one must be in ``dotenv``)."""
    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.group(1), match.group(2), match.group(3)
        if dotenv and dotenv.get(name):
            return dotenv[name]
        assert kind == ":-", f"{name} is required ({rest}) but the test's .env lacks it"
        return rest

    return re.sub(r"\$\{(\w+)(:-|:\?)([^}]*)\}", one, value)


def published(service: dict[str, Any]) -> list[tuple[str, range, range]]:
    """(host address, host ports, container ports) of each ``ports`` entry (short syntax)."""
    found = []
    for entry in service.get("ports") or []:
        address, host, container = interpolated(str(entry)).rsplit(":", 2)
        spans = [tuple(map(int, side.split("-"))) if "-" in side else (int(side), int(side)) for side in (host, container)]
        found.append((address, *(range(a, b + 1) for a, b in spans)))
    return found


def test_the_human_worker_serves_a_live_view_people_can_open() -> None:
    """A run waiting for a person on the compose stack gives a link that works from the host:
    the view listens on every interface of the container, its whole port span is published at
    the same numbers (so ``{port}`` in the link is the host's port), on loopback by default."""
    from browserq.live.server import PORT_SPAN

    human = services()["human"]
    env = environment(human)
    assert human["deploy"]["replicas"] == 1, "published host ports can be taken by one replica only"
    assert env["BROWSERQ_LIVE_VIEW_HOST"] == "0.0.0.0", "127.0.0.1 inside a container is unreachable"
    first = int(env["BROWSERQ_LIVE_VIEW_PORT"])
    span = range(first, first + PORT_SPAN)
    assert [(a, h, c) for a, h, c in published(human) if c == span] == [("127.0.0.1", span, span)]
    settings = Settings(**{k.removeprefix("BROWSERQ_").lower(): interpolated(v) for k, v in env.items()
                           if k.startswith("BROWSERQ_LIVE_VIEW_")})
    assert settings.live_view_public_url == "http://127.0.0.1:{port}"
    behind_proxy = interpolated(env["BROWSERQ_LIVE_VIEW_PUBLIC_URL"], {"LIVE_VIEW_URL_PREFIX": "https://live.example.com/w/"})
    assert behind_proxy == "https://live.example.com/w/{port}"
    queues = human["command"][human["command"].index("-Q") + 1]
    assert "browserq.human" in queues.split(","), "templates that may wait are routed to browserq.human"
    assert human["image"] == BROWSERQ_IMAGE and human["healthcheck"] == services()["worker"]["healthcheck"]


def test_webhook_settings_reach_every_browserq_service_from_the_env_file() -> None:
    """BROWSERQ_NOTIFY_URL and the webhook secret come from .env (optional, empty by default) to
    every service that enqueues or runs (a producer checks them, a worker signs and sends), and
    the settings load both with the defaults and with a .env that sets them."""
    names = ("BROWSERQ_NOTIFY_URL", "BROWSERQ_WEBHOOK_SECRET", "BROWSERQ_WEBHOOK_ALLOWED_HOSTS",
             "BROWSERQ_WEBHOOK_ALLOWED_NETWORKS")
    dotenv = {"BROWSERQ_NOTIFY_URL": "https://hooks.example.com/browserq", "BROWSERQ_WEBHOOK_SECRET": "whsec-x",
              "BROWSERQ_WEBHOOK_ALLOWED_HOSTS": "receiver"}
    for name in DB_SERVICES:
        env = environment(services()[name])
        assert all(env.get(n) == f"${{{n}:-}}" for n in names), f"{name} must take {names} from .env"
        for given in (None, dotenv):
            values = {n.removeprefix("BROWSERQ_").lower(): interpolated(env[n], given) for n in names}
            loaded = Settings(database_url="sqlite:///x.db", **values)
            assert loaded.notify_url == (given or {}).get("BROWSERQ_NOTIFY_URL")
    assert not set(names) & set(environment(services()["flower"]))
    section = (ROOT / "docs" / "deploying.md").read_text().partition("## Docker Compose")[2].partition("\n## ")[0]
    for documented in (*names, "LIVE_VIEW_URL_PREFIX", "LIVE_VIEW_BIND", "browserq.human"):
        assert documented in section, f"README 'Docker Compose' must document {documented}"


def test_artifacts_go_to_the_object_store() -> None:
    env = environment(services()["worker"])
    url = env.get("BROWSERQ_ARTIFACTS_URL", "")
    assert url == "s3://browserq-artifacts/runs"
    assert env.get("BROWSERQ_S3_ENDPOINT_URL", "").endswith("minio}:9000")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert env.get(key, "").startswith(f"${{{key}:?"), f"{key} must be required from .env"
    bucket = url.removeprefix("s3://").split("/")[0]
    script = " ".join(services()["createbuckets"]["command"])
    assert f"mc mb --ignore-existing local/{bucket}" in script


def test_flower_requires_basic_auth() -> None:
    env = environment(services()["flower"])
    assert env.get("FLOWER_BASIC_AUTH", "").startswith("${FLOWER_BASIC_AUTH:?"), (
        "flower must require FLOWER_BASIC_AUTH (${FLOWER_BASIC_AUTH:?...})"
    )
    assert "FLOWER_UNAUTHENTICATED_API" not in env
    assert not {"BROWSERQ_DATABASE_URL", "BROWSERQ_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"} & set(env)
    assert all(p.startswith("127.0.0.1:") for p in services()["flower"]["ports"])


def test_images_are_pinned() -> None:
    for name, svc in services().items():
        image = svc.get("image", "")
        if image == BROWSERQ_IMAGE:
            continue
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        assert tag and tag != "latest", f"{name}: pin {image!r} by tag"
    base = next(args for word, args in dockerfile() if word == "FROM")
    assert ":" in base and not base.endswith(":latest"), base


def test_volumes_are_declared_and_bind_sources_exist() -> None:
    declared = set(compose().get("volumes") or {})
    for name, svc in services().items():
        for kind, source, _ in mounts(svc):
            if kind == "volume":
                assert source in declared, f"{name}: volume {source!r} is not declared"
            elif kind == "bind":
                path = ROOT / source
                shipped = path.with_name(path.stem + ".example" + path.suffix)
                assert path.exists() or shipped.exists(), f"{name}: {source} does not exist"


def test_required_variables_are_documented() -> None:
    required = set(re.findall(r"\$\{(\w+):\?", (ROOT / "docker-compose.yml").read_text()))
    readme = (ROOT / "docs" / "deploying.md").read_text()
    section = readme.partition("## Docker Compose")[2].partition("\n## ")[0]
    missing = sorted(v for v in required if f"{v}=" not in section)
    assert not missing, f"README 'Docker Compose' must show these .env lines: {missing}"


def test_chromium_is_the_images() -> None:
    for name, svc in services().items():
        assert "BROWSERQ_CHROMIUM_PATH" not in environment(svc), (
            f"{name}: leave BROWSERQ_CHROMIUM_PATH to the Dockerfile (Playwright's build)"
        )


# --- Dockerfile -------------------------------------------------------------------------------
def runs() -> list[str]:
    return [args for word, args in dockerfile() if word == "RUN"]


def test_dockerfile_installs_with_the_constraints() -> None:
    pip_runs = [r for r in runs() if "pip install" in r]
    assert pip_runs, "the Dockerfile installs nothing with pip"
    for run in pip_runs:
        assert re.search(r"(-c|-r|--constraint|--requirement)\s+\S*constraints\.txt", run), (
            f"unpinned pip install: {run}"
        )
    assert any('"/tmp/src[flower,s3]"' in r and "-c /tmp/constraints.txt" in r for r in pip_runs)
    assert any("pip check" in r for r in runs())
    assert ("COPY", "constraints.txt /tmp/constraints.txt") in dockerfile()


def test_dockerfile_uses_playwrights_chromium_not_debians() -> None:
    for run in runs():
        for packages in re.findall(r"apt-get install ([^&;]*)", run):
            assert "chromium" not in packages.split(), f"Debian's chromium installed: {run}"
    install = [r for r in runs() if "playwright install" in r]
    assert len(install) == 1 and "chromium" in install[0] and "--with-deps" in install[0]
    path = dockerfile_env().get("BROWSERQ_CHROMIUM_PATH")
    assert path, "set BROWSERQ_CHROMIUM_PATH to Playwright's build: autodetection prefers others"
    assert re.search(rf"ln -s .*chromium\.executable_path.*\s{re.escape(path)}\b", install[0])
    assert f"{path} --version" in install[0], "check at build time that the browser starts"
    assert "PLAYWRIGHT_BROWSERS_PATH" in dockerfile_env(), "browsers must not land in root's $HOME"


def test_dockerfile_ships_the_headless_shell_too() -> None:
    """BROWSERQ_BROWSER=headless-shell works in the image: Playwright's shell, linked and checked."""
    (install,) = [r for r in runs() if "playwright install" in r]
    assert "--no-shell" not in install and "chromium-headless-shell" in install
    shell = dockerfile_env().get("BROWSERQ_HEADLESS_SHELL_PATH")
    assert shell, "set BROWSERQ_HEADLESS_SHELL_PATH to Playwright's headless shell"
    assert re.search(rf"ln -s .*chrome-headless-shell\)\"\s+{re.escape(shell)}\b", install)
    assert f"{shell} --version" in install, "check at build time that the shell starts"


def test_dockerfile_runs_as_non_root() -> None:
    users = [args for word, args in dockerfile() if word == "USER"]
    assert users and users[-1].split(":")[0] not in {"root", "0"}


def test_dockerfile_healthcheck_is_the_ready_file() -> None:
    checks = [args for word, args in dockerfile() if word == "HEALTHCHECK"]
    assert checks and 'test -f "$BROWSERQ_READY_FILE"' in checks[0]
    assert dockerfile_env()["BROWSERQ_READY_FILE"] == environment(services()["worker"])[
        "BROWSERQ_READY_FILE"
    ]
    for name in browserq_services().keys() - {"worker"}:
        assert services()[name].get("healthcheck"), f"{name}: override the image's worker healthcheck"


def test_dockerignore_keeps_state_out_and_sources_in() -> None:
    patterns = [
        p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]

    def ignored(path: str) -> bool:
        return any(fnmatch.fnmatch(path, p.removeprefix("**/")) or path.split("/")[0] == p for p in patterns)

    for path in (".venv", "artifacts", "browserq.db", ".env", "schedules.env", ".git"):
        assert ignored(path), f".dockerignore must exclude {path}"
    for word, args in dockerfile():
        if word == "COPY":
            for source in args.split()[:-1]:
                assert not ignored(source), f".dockerignore excludes {source}, which the Dockerfile copies"


# --- constraints.txt --------------------------------------------------------------------------
def test_constraints_pin_every_runtime_dependency() -> None:
    pinned = pins()
    problems = []
    for req in runtime_requirements():
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req.name} is not pinned")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name}=={version} does not satisfy {req}")
    assert not problems, f"constraints.txt vs pyproject.toml: {problems}"


def test_constraints_match_the_tested_environment() -> None:
    pinned, installed = pins(), runtime_closure()
    assert pinned == installed, (
        "constraints.txt differs from this environment's runtime dependencies: "
        f"missing {sorted(installed.keys() - pinned.keys())}, extra {sorted(pinned.keys() - installed.keys())}, "
        f"other versions {sorted(n for n in pinned.keys() & installed.keys() if pinned[n] != installed[n])}; "
        "regenerate: .venv/bin/python tests/test_deploy.py > constraints.txt"
    )


# --- schedules.example.yml --------------------------------------------------------------------
def readme_template_commands() -> str:
    """The README's shell lines that write templates/*.yaml (the example schedule's template)."""
    section = (ROOT / "docs" / "deploying.md").read_text().partition("## Docker Compose")[2].partition("\n## ")[0]
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if re.search(r"> templates/\S+\.yaml", line):
                start = i
                while start > 0 and lines[start - 1].endswith("\\"):
                    start -= 1
                return "\n".join(lines[start:i + 1])
    raise AssertionError("README 'Docker Compose' has no command that writes templates/NAME.yaml")


def test_schedules_example_passes_beats_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """schedules.example.yml, after the README's steps, is what `browserq beat` accepts."""
    check = pytest.importorskip("browserq.schedules.check")
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    subprocess.run(["bash", "-ec", readme_template_commands()], cwd=tmp_path, check=True)
    registry = TemplateRegistry.from_settings(Settings(templates_dir=tmp_path / "templates"))
    example = ROOT / "schedules.example.yml"
    checked = check.check_schedules(example, registry, SecretBox(generate_key()))
    assert checked.ok and checked.ready, [str(p) for p in checked.problems]
    # The disabled entries are valid too once enabled, with the environment they reference.
    data = yaml.safe_load(example.read_text())
    for entry in data["schedules"]:
        entry["enabled"] = True
        for value in entry["params"].values():
            if isinstance(value, dict) and "env" in value:
                monkeypatch.setenv(value["env"], "s3cret-pass")
    enabled = tmp_path / "schedules.yml"
    enabled.write_text(yaml.safe_dump(data))
    checked = check.check_schedules(enabled, registry, SecretBox(generate_key()))
    assert checked.ok and len(checked.ready) == len(data["schedules"]), [str(p) for p in checked.problems]


if __name__ == "__main__":  # pragma: no cover - the constraints generator
    sys.stdout.write(render_constraints())
