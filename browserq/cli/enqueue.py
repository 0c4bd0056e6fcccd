"""``browserq enqueue``: send a run to the workers from the command line, optionally wait for it.

The run takes the producer's path, exactly as ``run_template.apply_async`` (resolve, validate
once, record, send: :mod:`browserq.submit.producer`), so input it refuses is refused the same
way and nothing is enqueued. What it prints: the run id on stdout (alone when stdout is a pipe:
``RUN=$(browserq enqueue …)``); with ``--wait``, progress on stderr and the outcome on stdout.

Exit codes: 0 sent (``--wait``: completed), 1 the run ended failed / needs_review / cancelled,
2 the input was refused, 3 the broker or the database could not be reached (nothing enqueued),
4 ``--wait`` gave up after ``--timeout`` (the run goes on).

Secret params never come from the command line, which ``ps`` shows every user: a ``secret`` param
must be given as ``-p name=@FILE`` or ``-p name=@-`` (stdin).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Annotated, Any

import typer
from rich.text import Text

from browserq.cli.follow import follow_run
from browserq.cli.params import parse_params
from browserq.cli.render import console, fail, plain, print_outcome
from browserq.errors import BrokerUnavailable, BrowserqError, StoreError

EXIT_FAILED, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_TIMED_OUT = 1, 2, 3, 4


def one_line(exc: BaseException) -> str:
    """An error's message on one line (ParamError and TemplateInvalid list a problem per line)."""
    lines = [line.strip().removeprefix("- ") for line in str(exc).splitlines() if line.strip()]
    if len(lines) < 2:
        return lines[0] if lines else type(exc).__name__
    head = lines[0].removesuffix(":")
    return f"{head}: {'; '.join(lines[1:])}"


def inline_secrets(pairs: list[str], secret_params: set[str]) -> list[str]:
    """The secret params given as a value on the command line (not ``@FILE`` / ``@-``)."""
    inline = []
    for pair in pairs:
        key, _, value = pair.partition("=")
        key = key.strip()
        if key in secret_params and (not value.startswith("@") or value.startswith("@@")):
            inline.append(key)
    return inline


def enqueue(
    template: Annotated[str, typer.Argument(help="Template reference: name, name@1.2 or name@1.2.0.")],
    param: Annotated[list[str], typer.Option(
        "--param", "-p",
        help="A parameter, key=value (repeatable). key=@FILE reads the value from a file, key=@- from "
        "stdin; secret params must be given that way (never in the command line). key=@@x is the "
        "literal value @x.",
    )] = [],  # noqa: B006
    wait: Annotated[bool, typer.Option("--wait", "-w", help="Follow the run's progress and print its "
                                       "outcome; exit 0 completed, 1 failed.")] = False,
    queue: Annotated[str | None, typer.Option(help="Send to this queue (default: the template's "
                                              "settings.queue, else BROWSERQ_QUEUE).")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="A second enqueue with this key joins the "
                                                        "first run instead of starting another.")] = None,
    timeout: Annotated[float | None, typer.Option(min=0.1, help="With --wait: stop waiting after this "
                                                  "many seconds (exit 4; the run goes on). Implies --wait.")] = None,
    identity: Annotated[str | None, typer.Option(help="Run as this named identity.")] = None,
    identity_pool: Annotated[str | None, typer.Option(help="Run as an identity from this pool.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Count the run against this tenant's cap.")] = None,
    notify: Annotated[str | None, typer.Option(help="POST the run's events (waiting_for_human, completed, "
                                               "failed, …) to this URL, signed with BROWSERQ_WEBHOOK_SECRET.")] = None,
) -> None:
    """Send a run to the workers (like run_template.delay) and print its id; --wait follows it."""
    try:
        run_id, store = _send(template, param, queue=queue, idempotency_key=idempotency_key,
                              identity=identity, identity_pool=identity_pool, tenant=tenant, notify=notify)
    except (BrokerUnavailable, StoreError) as exc:
        fail(one_line(exc), EXIT_UNREACHABLE if _unreachable(exc) else EXIT_REFUSED)
    except (BrowserqError, ValueError) as exc:
        fail(one_line(exc), EXIT_REFUSED)
    if plain():
        print(run_id, flush=True)
    else:
        console.print(Text.assemble("enqueued run ", (run_id, "bold cyan"), "  ",
                                    (f"browserq show {run_id} --follow", "dim")), highlight=False)
    if not (wait or timeout is not None):
        return
    try:
        ended = follow_run(store, run_id, timeout_s=timeout)
    except StoreError as exc:
        fail(one_line(exc), EXIT_UNREACHABLE)
    if ended is None:
        fail(f"run {run_id} has not ended after {timeout:g} s; it goes on: browserq show {run_id} --follow",
             EXIT_TIMED_OUT)
    print_outcome(_outcome(ended), store)
    raise typer.Exit(0 if ended.status == "completed" else EXIT_FAILED)


def _send(template: str, pairs: list[str], *, queue: str | None, **options: Any) -> tuple[str, Any]:
    """Accept and send the run through the producer; returns its id and the producer's store."""
    from browserq.celery_app import producer_services, run_template
    from browserq.templates import secret_names

    services = producer_services()
    secret = secret_names(services.registry.resolve(template.strip()).template)
    inline = inline_secrets(pairs, secret)
    if inline:
        names = ", ".join(inline)
        fail(f"secret param {names} cannot be given on the command line (every user sees it in `ps`): "
             f"use -p {inline[0]}=@FILE or -p {inline[0]}=@- (stdin)")
    params = parse_params(pairs)
    run_options = {k: v for k, v in options.items() if v is not None}
    send_options = {"queue": queue} if queue else {}
    result = run_template.apply_async(args=[template], kwargs={"params": params, **run_options},
                                      **send_options)
    return str(result.id), services.store


def _unreachable(exc: BaseException) -> bool:
    from browserq.store import StoreUnavailable

    return isinstance(exc, BrokerUnavailable | StoreUnavailable)


def _outcome(run: Any) -> Any:
    """A stored run as the outcome ``print_outcome`` prints."""
    return SimpleNamespace(run_id=run.id, status=run.status, outputs=run.outputs or {},
                           error_code=run.error_code, error_step_path=run.error_step_path,
                           error_message=run.error_message, warnings=run.warnings or [])


__all__ = ["EXIT_FAILED", "EXIT_REFUSED", "EXIT_TIMED_OUT", "EXIT_UNREACHABLE", "enqueue",
           "inline_secrets", "one_line"]
