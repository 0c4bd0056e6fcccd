"""What every part of the runner is built from: the process's services, in one bundle.

:class:`RunParts` is made once per runner (one per worker process) and handed to each part's
constructor; a part keeps only what it uses. Two calls live here because every part needs them
the same way: THE boundary where an exception from the page or the browser becomes a
:class:`StepFailed` (:meth:`RunParts.failure`), and unblocking a page whose script never ends
(:meth:`RunParts.unblock`).
"""

from __future__ import annotations

from dataclasses import dataclass

from browserq.browsers.errors import translate
from browserq.browsers.pool import BrowserPool
from browserq.errors import StepFailed
from browserq.limits import RateLimiter
from browserq.proxies import ProxyManager
from browserq.run_events import Observers
from browserq.runner.state import RunState
from browserq.runner.watchdog import PageState
from browserq.secrets import SecretBox
from browserq.settings import Settings


@dataclass
class RunParts:
    """The services a run uses: the browser pool, the settings, who watches, the limits, the
    proxies and the boxes that encrypt what is kept (identity storage, checkpoints)."""

    pool: BrowserPool
    settings: Settings
    observers: Observers
    secret_box: SecretBox
    #: Encrypts checkpoints of runs with secrets: the real key, else one only this process has.
    checkpoint_box: SecretBox
    rate_limiter: RateLimiter | None = None
    proxies: ProxyManager | None = None  # None when no proxy is configured

    def failure(self, exc: BaseException, *, element_missing: bool | None = None) -> StepFailed:
        """THE boundary: an exception from the page, the browser or an action becomes the
        :class:`StepFailed` that describes it (a gone browser: an InfrastructureError)."""
        return translate(exc, browser_connected=self.pool.connected, element_missing=element_missing)

    async def unblock(self, state: RunState) -> bool:
        """End a script that keeps the page's main thread busy; close the page if that fails.
        True when the page was not answering (a timeout then is the page's, not the element's)."""
        browser = state.browser
        if browser.watchdog is None or browser.crashed or browser.page_dropped or not self.pool.connected:
            return False
        page_state = await browser.watchdog.unblock()
        browser.page_dropped = page_state is PageState.DROPPED
        return page_state is not PageState.RESPONSIVE
