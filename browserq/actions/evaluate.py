"""``eval``: a JS expression in the page (only where the template allows it)."""

from __future__ import annotations

import asyncio
from typing import Any

from browserq.actions.context import StepContext
from browserq.actions.outputs import evaluate_bounded
from browserq.errors import Codes, StepFailed
from browserq.templates import EvalStep


async def evaluate(ctx: StepContext, step: EvalStep) -> Any:
    """Run a JS expression; an exception in the page is the step's failure, nothing more."""
    if not ctx.settings.allow_eval:
        raise StepFailed(Codes.EVAL_DISABLED, "this template does not set settings.allow_eval: true")
    timeout_ms = ctx.timeout_ms  # Playwright does not time out evaluate: this is the step's bound
    try:
        evaluation = evaluate_bounded(ctx.page, step.expression, ctx.max_output_bytes)
        return await asyncio.wait_for(evaluation, timeout_ms / 1000)
    except StepFailed:
        raise  # the result was too large or not data (browserq.actions.outputs)
    except TimeoutError as exc:
        raise StepFailed(Codes.TIMEOUT, f"expression did not finish within {timeout_ms:.0f} ms") from exc
    except Exception as exc:
        if not ctx.page.context.browser or not ctx.page.context.browser.is_connected():
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StepFailed(Codes.EVAL_ERROR, ctx.redactor.text(message)[:500]) from exc
