"""``screenshot``: a picture of the page or an element, kept as an artifact."""

from __future__ import annotations

from typing import Any

from browserq.actions.context import StepContext
from browserq.actions.locate import first
from browserq.guards import safe_artifact_path
from browserq.templates import ScreenshotStep


async def screenshot(ctx: StepContext, step: ScreenshotStep) -> Any:
    """A PNG of the page or an element, kept as an artifact of the step (named safely)."""
    name = step.name or f"screenshot-{ctx.step_path}.png"
    safe_artifact_path(ctx.artifact_base, name)  # reject an escaping name before taking the picture
    if step.selector:
        data = await first(ctx, step.selector).screenshot(timeout=ctx.timeout_ms)
    else:
        data = await ctx.page.screenshot(full_page=step.full_page, timeout=ctx.timeout_ms)
    stored = await ctx.save_artifact("screenshot", name, data, "image/png")
    return {"artifact": stored.path, "size": stored.size}
