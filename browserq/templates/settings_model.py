"""A template's ``settings:`` block: its time budget, retries, domains and network policy.

Per-template limits and policies, checked when the template loads. Rates and blockable resource
kinds are parsed by :mod:`browserq.limit_specs`, the same parsers the service settings use.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from browserq.limit_specs import parse_rate_map, validate_block_kinds
from browserq.templates.fields import QueueName, Retries, RunSeconds, StepSeconds, StrictModel


def _host_entry(value: str) -> str:
    host = value.strip().lower()
    if not host or re.search(r"[/:@\s?#\\]", host):
        raise ValueError(
            f"allowed_domains entry {value!r} must be a bare host name such as quotes.example "
            "(no scheme, port or path)"
        )
    return host


def _trace_flag(value: Any) -> Any:
    # YAML 1.1 reads an unquoted ``off`` as False.
    return "off" if value is False else value


class TemplateSettings(StrictModel):
    """Per-template limits and policies."""

    timeout_s: RunSeconds = 120.0
    step_timeout_s: StepSeconds = 30.0
    allowed_domains: list[Annotated[str, AfterValidator(_host_entry)]] = Field(default_factory=list)
    trace: Annotated[Literal["on_failure", "always", "off"], BeforeValidator(_trace_flag)] = (
        "on_failure"
    )
    allow_eval: bool = False
    step_retries: Retries | None = None
    #: Retries of the whole run (from its last checkpoint, fresh context) for run-level errors.
    run_retries: Retries | None = None
    #: ``auto``: also checkpoint after every step that lands on a new URL; ``explicit``: only
    #: steps marked ``checkpoint: true`` (and side effects, which always checkpoint).
    checkpoints: Literal["auto", "explicit"] = "auto"
    #: Derive an idempotency key from the params, e.g. ``"order-${order_id}"``: a second submit
    #: with the same key joins the first run instead of starting another.
    idempotency_key: str | None = None
    #: Where this template's run events are POSTed (signed), unless the run names another URL.
    notify: str | None = None
    #: Per-domain rates for this template's runs, overriding BROWSERQ_RATE_LIMITS:
    #: ``{"example.com": "2/s", "*": "10/s"}``. Shared by every worker.
    rate_limits: dict[str, str] = Field(default_factory=dict)
    #: Move the mouse along curved paths and type with human cadence (slower; for picky sites).
    human_input: bool = False
    #: Resource types to abort in this template's runs (image, font, media, stylesheet).
    block_resources: list[str] = Field(default_factory=list)
    #: ``open``: documents (navigations, redirects, iframes, popups) to hosts outside
    #: allowed_domains are blocked before they are sent; ``strict``: every request is (images,
    #: scripts, fetch/XHR, beacons, WebSockets). Needs allowed_domains.
    network: Literal["open", "strict"] = "open"
    #: The Celery queue this template's runs are sent to (default BROWSERQ_QUEUE); a caller's
    #: ``apply_async(queue=...)`` / ``enqueue --queue`` wins. Workers consume it with ``-Q``.
    queue: QueueName | None = None
    #: How browser dialogs (alert, confirm, prompt, beforeunload) are answered unless a step's
    #: ``dialog:`` says otherwise; every one is recorded on its step attempt.
    dialogs: Literal["dismiss", "accept"] = "dismiss"

    @field_validator("notify")
    @classmethod
    def _notify_url(cls, value: str | None) -> str | None:
        from browserq.webhooks.targets import notify_url_problem

        if value is not None and (problem := notify_url_problem(value)):
            raise ValueError(problem)
        return value

    @field_validator("rate_limits")
    @classmethod
    def _valid_rates(cls, value: dict[str, str]) -> dict[str, str]:
        return parse_rate_map(value) if value else value

    @model_validator(mode="after")
    def _strict_needs_domains(self) -> TemplateSettings:
        if self.network == "strict" and not self.allowed_domains:
            raise ValueError(
                "network: strict blocks requests to hosts outside allowed_domains, "
                "but allowed_domains is empty: list the hosts the template may reach"
            )
        return self

    @field_validator("block_resources")
    @classmethod
    def _valid_kinds(cls, value: list[str]) -> list[str]:
        return sorted(validate_block_kinds(value)) if value else value
