"""``browserq locate URL``: the page's interactive elements, each with a locator to paste into
a template (``selector: {role: button, name: "Send"}``), checked to match that element alone.

The page is opened headless with browserq's own launcher and settings (the system Chromium, the
closed-network flags); :mod:`browserq.cli.locate_page` does the looking. On a terminal a table,
piped tab-separated lines, ``--json`` a list to build templates from.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer
import yaml
from rich import box
from rich.table import Table
from rich.text import Text

from browserq.cli.render import console, err_console, fail, friendly_errors, plain, tsv
from browserq.cli.terminal import json_text
from browserq.settings import get_settings

#: Launching the driver and Chromium may take this long, on top of ``--timeout``.
LAUNCH_TIMEOUT_S = 60.0


def _escaped(text: str) -> str:
    """``${`` is a reference in a template: a page text holding it is written ``$${``."""
    return text.replace("${", "$${")


def template_selector(selector: str | dict[str, Any]) -> str | dict[str, Any]:
    """The selector as a template holds it (``${`` escaped), for ``--json``."""
    if isinstance(selector, str):
        return _escaped(selector)
    return {k: template_selector(v) if isinstance(v, str | dict) else v for k, v in selector.items()}


def yaml_selector(selector: str | dict[str, Any]) -> str:
    """A selector as YAML to paste after ``selector:``: ``{role: button, name: "Send"}``."""
    if isinstance(selector, str):
        return json_text(_escaped(selector))
    parts = []
    for key, value in selector.items():
        if key == "role":
            shown = str(value)
        elif isinstance(value, bool):
            shown = "true" if value else "false"
        elif isinstance(value, int):
            shown = str(value)
        else:
            shown = yaml_selector(value)
        parts.append(f"{key}: {shown}")
    return "{" + ", ".join(parts) + "}"


def _element_text(found: Any) -> str:
    element = found.element
    what = element.role or element.info.get("tag") or "element"
    name = element.name or element.info.get("label") or element.info.get("placeholder") or element.info.get("text")
    return f'{what} "{name}"' if name else what


def as_json(found: Any) -> dict[str, Any]:
    """One element as ``--json`` lists it."""
    element = found.element
    data: dict[str, Any] = {
        "element": _element_text(found),
        "role": element.role,
        "name": element.name,
        "tag": element.info.get("tag"),
        "type": element.info.get("type"),
        "action": found.action,
        "selector": template_selector(found.selector) if found.selector is not None else None,
        "yaml": f"selector: {yaml_selector(found.selector)}" if found.selector is not None else None,
        "by": found.strategy,
        "notes": found.notes,
    }
    if element.info.get("options") is not None:
        data["options"] = element.info["options"]
    return data


async def _look(url: str, wait_for: Any, timeout_s: float, limit: int) -> tuple[list[Any], int | None]:
    """Open ``url`` headless, wait for ``wait_for``, find the locators; ``(found, http status)``."""
    from browserq.actions.locators import to_locator
    from browserq.browsers.driver import start_driver, stop_driver
    from browserq.browsers.launcher import launch_chromium
    from browserq.cli.locate_page import find_locators

    settings = get_settings().model_copy(update={"headless": True})
    playwright = await start_driver()
    try:
        browser, _marker = await launch_chromium(playwright, settings)
        try:
            page = await (await browser.new_context()).new_page()
            response = await page.goto(url, wait_until="load", timeout=timeout_s * 1000)
            if wait_for is not None:
                await to_locator(page, wait_for).first.wait_for(state="visible", timeout=timeout_s * 1000)
            return await find_locators(page, limit), (response.status if response else None)
        finally:
            await browser.close()
    finally:
        await stop_driver(playwright, quiet=True)


def _wait_for(value: str | None) -> Any:
    """``--wait-for``: a selector string, or a locator mapping written as YAML (``{role: …}``)."""
    if value is None:
        return None
    from browserq.templates.locators import as_selector

    if value.lstrip().startswith("{"):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ValueError(f"--wait-for {value!r} is not a YAML mapping: {exc.__class__.__name__}") from None
    try:
        return as_selector(value)
    except ValueError as exc:
        raise ValueError(f"--wait-for: {exc}") from None


@friendly_errors
def locate(
    url: Annotated[str, typer.Argument(help="The page to look at (http or https).")],
    wait_for: Annotated[str | None, typer.Option(
        "--wait-for", help="First wait until this is visible: a selector, or a locator such as "
        "'{role: button, name: Send}'.")] = None,
    timeout: Annotated[float, typer.Option(min=0.1, max=600.0, help="Seconds for loading the page "
                                           "and for --wait-for.")] = 30.0,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=2000, help="At most this many "
                                       "elements.")] = 300,
    as_json_flag: Annotated[bool, typer.Option("--json", help="Print a JSON list (element, action, "
                                               "selector, yaml, by).")] = False,
) -> None:
    """List a page's interactive elements with a locator for each, ready to paste into a template.

    Each locator is the most robust one that matches the element and nothing else: role and
    accessible name, then label, test id, placeholder, a short CSS selector.
    """
    from browserq.browsers.api import Error as PlaywrightError
    from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
    from browserq.browsers.errors import first_line
    from browserq.guards import check_url

    check_url(url, [])  # http(s) with a host, else one line (StepFailed is a BrowserqError)
    target = _wait_for(wait_for)
    try:
        found, status = asyncio.run(asyncio.wait_for(_look(url, target, timeout, limit), timeout * 2 + LAUNCH_TIMEOUT_S))
    except (PlaywrightTimeoutError, TimeoutError):
        what = f"{url} did not load" if target is None else f"{url} did not show {wait_for}"
        fail(f"{what} within {timeout:g} s (raise --timeout)")
    except PlaywrightError as exc:
        fail(f"could not load {url}: {first_line(exc)}")
    if status is not None and status >= 400:
        err_console.print(f"warning: {url} answered HTTP {status}", style="yellow", highlight=False)
    if as_json_flag:
        print(json_text([as_json(f) for f in found], indent=2))
    elif plain():
        tsv("element", "action", "selector", "by")
        for f in found:
            tsv(_element_text(f), f.action, yaml_selector(f.selector) if f.selector is not None else "", f.strategy)
    else:
        _table(url, found)


def _table(url: str, found: list[Any]) -> None:
    table = Table(title=f"{len(found)} interactive elements on {url}", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("#", "element", "action", "selector (paste into a step)", "by"):
        table.add_column(column, overflow="fold")
    for number, f in enumerate(found, 1):
        selector = Text(f"selector: {yaml_selector(f.selector)}") if f.selector is not None else Text(
            "; ".join(f.notes), style="red")
        by = Text(f.strategy, style="yellow" if f.notes else "dim")
        table.add_row(str(number), _element_text(f), f.action, selector, by)
    console.print(table)
    console.print("A step: - {action: click, selector: {role: button, name: \"Send\"}}  (browserq locate --json "
                  "for all of it)", style="dim", highlight=False)


__all__ = ["as_json", "locate", "template_selector", "yaml_selector"]
