"""The browser layer: a dedicated event-loop thread, Chromium launching, and the pool of contexts.

:mod:`browserq.browsers.errors` is where Playwright's and Chromium's errors become browserq's.
"""

from browserq.browsers.launcher import find_browser_pid, launch_chromium
from browserq.browsers.loop import EventLoopThread
from browserq.browsers.pool import BrowserPool

__all__ = ["BrowserPool", "EventLoopThread", "find_browser_pid", "launch_chromium"]
