"""Turn off Chromium's network prediction before a guarded context navigates anywhere.

A navigation's request is paused by the ``Fetch`` guard (:mod:`browserq.browsers.domains`), but
before the request even exists Chromium's ``NavigationRequest`` opens a TCP connection to the
target host when the embedder's ``ShouldPreconnectNavigation`` says so — and Chrome says so while
the profile's ``net.network_prediction_options`` pref allows preloading. So for every foreign
document a guarded page tried (navigation, iframe, popup, meta refresh, form, object, PDF) the
host saw a handshake: no byte of the request, but the worker's address and the attempt.

No launch flag or feature switches that preconnect off (``--disable-features`` candidates and
``--policy`` were tried on Chromium 156); the pref does (``2`` = never predict), and off-the-record
contexts read it from the browser's own profile. Playwright launches with a profile of its own
making, so the pref is set at run time the way the settings page sets it:
``chrome.settingsPrivate.setPref`` in a ``chrome://settings`` tab of the default (unused)
context, opened and closed on the guard's browser-level session. The value is read back; if it
did not take, a warning is logged (the requests themselves are still blocked).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import CDPSession

log = structlog.get_logger(__name__)

#: The pref and its "never predict" value (chrome/browser/preloading/preloading_prefs.h).
PREF = "net.network_prediction_options"
NEVER = 2
#: How long the settings page may take to come up (it loads once per browser).
READY_TIMEOUT_S = 15.0
_POLL_S = 0.05

#: Sets the pref and reads it back; throws (and is retried) until the page's API exists.
_SET_PREF = f"""(async () => {{
  const api = chrome.settingsPrivate;
  await new Promise(done => api.setPref({json.dumps(PREF)}, {NEVER}, "", done));
  return await new Promise(done => api.getPref({json.dumps(PREF)}, p => done(p.value)));
}})()"""


async def turn_off_network_prediction(session: CDPSession) -> bool:
    """Set ``net.network_prediction_options`` to never on ``session``'s browser; True if it took."""
    try:
        value = await asyncio.wait_for(_set_in_settings_tab(session), READY_TIMEOUT_S)
    except Exception as exc:  # an embedder without the settings page, a browser going away
        log.warning(
            "network prediction not turned off: guarded pages may preconnect", error=str(exc)
        )
        return False
    if value != NEVER:
        log.warning("network prediction not turned off: guarded pages may preconnect", value=value)
        return False
    return True


async def _set_in_settings_tab(session: CDPSession) -> Any:
    target = await session.send(
        "Target.createTarget", {"url": "chrome://settings/", "background": True}
    )
    target_id = target["targetId"]
    try:
        attached = await session.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": False}
        )
        return await _evaluate_until_ready(session, attached["sessionId"])
    finally:
        try:
            await session.send("Target.closeTarget", {"targetId": target_id})
        except Exception as exc:  # already gone with its browser
            log.debug("settings tab not closed", error=str(exc))


async def _evaluate_until_ready(session: CDPSession, session_id: str) -> Any:
    """Evaluate :data:`_SET_PREF` in the (non-flat) attached tab until the settings API answers."""
    replies: dict[int, dict[str, Any]] = {}
    arrived = asyncio.Event()

    def on_message(event: dict[str, Any]) -> None:
        if event.get("sessionId") != session_id:
            return
        message = json.loads(event["message"])
        if "id" in message:
            replies[message["id"]] = message
            arrived.set()

    session.on("Target.receivedMessageFromTarget", on_message)
    try:
        call_id = 0
        while True:  # bounded by the caller's READY_TIMEOUT_S
            call_id += 1
            params = {"expression": _SET_PREF, "awaitPromise": True, "returnByValue": True}
            message = {"id": call_id, "method": "Runtime.evaluate", "params": params}
            await session.send(
                "Target.sendMessageToTarget",
                {"sessionId": session_id, "message": json.dumps(message)},
            )
            while call_id not in replies:
                arrived.clear()
                await arrived.wait()
            result = replies.pop(call_id).get("result") or {}
            if "exceptionDetails" not in result and "result" in result:
                return result["result"].get("value")
            await asyncio.sleep(_POLL_S)  # the page is still loading: its API is not there yet
    finally:
        session.remove_listener("Target.receivedMessageFromTarget", on_message)
