"""Chromium's launch flags as browserq passes them: tuned for throughput, one value per list switch.

Two facts drive this module (measured on Debian's Chromium 156 + Playwright 1.65, figures in
``bench/README.md``):

* **Headless Chromium does browser-UI work nobody sees.** Every new page gets the omnibox
  popup's WebUI (``chrome://omnibox-popup.top-chrome/``) in a renderer of its own that re-renders
  on every navigation: ~60 % of all renderer CPU of a five-page listing crawl with a fresh
  context per job. And with a fresh context per run, the spare renderer Chromium keeps warm for
  the last context is thrown away each time. :data:`BROWSERQ_DISABLED_FEATURES` turns both off;
  ``--disable-gpu`` (headless only) composites in software instead of through SwiftShader GL —
  WebGL itself stays available on SwiftShader.
* **Chromium keeps only the last ``--disable-features`` (and ``--enable-features``, …).** Playwright
  passes its own list first and appends ours after it, so a second switch would silently
  re-enable everything Playwright disables (its HTTP-upgrade, paint-holding, … fixes). So every
  list switch is emitted once, holding Playwright's defaults, browserq's and the user's
  (``BROWSERQ_CHROMIUM_ARGS``) together; a feature the user enables is never also disabled.

Playwright does not export its lists, so :data:`PLAYWRIGHT_FEATURE_DEFAULTS` mirrors them, and
:func:`dropped_defaults` reads the launched browser's command line to find any that a newer
Playwright added: the launcher logs them once and :func:`learn_defaults` adds them from the next
launch on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Switches whose value is a comma-separated list that Chromium reads from the last occurrence only.
LIST_SWITCHES: tuple[str, ...] = (
    "--disable-features",
    "--enable-features",
    "--disable-blink-features",
    "--enable-blink-features",
)

#: The "enable" switch whose names win over each "disable" switch.
ENABLE_FOR: dict[str, str] = {
    "--disable-features": "--enable-features",
    "--disable-blink-features": "--enable-blink-features",
}

#: What Playwright 1.65 passes for the list switches (``chromiumSwitches.ts``), kept so that ours,
#: which come last and win, still carry them.
PLAYWRIGHT_FEATURE_DEFAULTS: dict[str, tuple[str, ...]] = {
    "--disable-features": (
        "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
        "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding",
        "ThirdPartyStoragePartitioning", "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin",
        "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch",
        "msForceBrowserSignIn", "msEdgeUpdateLaunchServicesPreferredVersion",
    ),
    "--enable-features": ("CDPScreenshotNewSurface", "SkipListAccountsWithoutGaiaCookies"),
}

#: Features browserq turns off in every browser it launches, and why.
BROWSERQ_DISABLED_FEATURES: tuple[str, ...] = (
    # The omnibox popup's WebUI: a hidden renderer per page that re-renders on every navigation.
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "WebUIOmniboxFullPopup",
    # A spare renderer warmed for the last context; browserq's next run is in a new context.
    "SpareRendererForSitePerProcess",
)

#: Flags that only make sense without a screen.
HEADLESS_ARGS: tuple[str, ...] = ("--disable-gpu",)

#: Playwright defaults found missing from the mirror at run time (see :func:`dropped_defaults`).
_learned_defaults: dict[str, set[str]] = {}


def tuned_args(args: Sequence[str], *, headless: bool) -> list[str]:
    """``args`` plus browserq's throughput flags, with every list switch merged into one."""
    extra = [f"--disable-features={','.join(BROWSERQ_DISABLED_FEATURES)}"]
    if headless:
        extra += [a for a in HEADLESS_ARGS if a not in args]
    return merge_list_switches([*extra, *args])


def merge_list_switches(args: Iterable[str]) -> list[str]:
    """One occurrence of each list switch, holding Playwright's defaults and every value given.

    Values keep their order (defaults first) without repeats; a feature named in
    ``--enable-features`` is taken out of ``--disable-features`` (and the same for Blink
    features), so the user's explicit "enable" wins. Other flags keep their order; merged
    switches go at the end, where Chromium reads them last.
    """
    values: dict[str, list[str]] = {}
    for switch in LIST_SWITCHES:
        defaults = [*PLAYWRIGHT_FEATURE_DEFAULTS.get(switch, ()), *sorted(_learned_defaults.get(switch, ()))]
        if defaults:
            values[switch] = defaults
    given: set[str] = set()
    rest: list[str] = []
    for arg in args:
        switch, _, value = arg.partition("=")
        if switch not in LIST_SWITCHES:
            rest.append(arg)
            continue
        given.add(switch)
        values.setdefault(switch, []).extend(v.strip() for v in value.split(",") if v.strip())
    for disable, enable in ENABLE_FOR.items():
        enabled = set(values.get(enable, ()))
        if enabled and disable in values:
            values[disable] = [v for v in values[disable] if v not in enabled]
    merged = [
        f"{switch}={','.join(dict.fromkeys(values[switch]))}"
        for switch in LIST_SWITCHES
        # A switch nobody but Playwright sets is left to Playwright.
        if switch in given and values.get(switch)
    ]
    return rest + merged


def dropped_defaults(cmdline: Sequence[str]) -> dict[str, list[str]]:
    """List values an earlier occurrence carried that the last (effective) one lacks.

    ``cmdline`` is the browser process's command line: Playwright's switches come first and ours
    last, so anything returned here is a default of the installed Playwright that the mirror
    does not know (a name the user enabled is left out of a disable list on purpose, so it is
    not counted).
    """
    seen: dict[str, list[list[str]]] = {}
    for arg in cmdline:
        switch, _, value = arg.partition("=")
        if switch in LIST_SWITCHES:
            seen.setdefault(switch, []).append([v for v in value.split(",") if v])
    dropped: dict[str, list[str]] = {}
    for switch, occurrences in seen.items():
        effective = set(occurrences[-1]) | set(seen.get(ENABLE_FOR.get(switch, ""), [[]])[-1])
        lost = [v for occurrence in occurrences[:-1] for v in occurrence if v not in effective]
        if lost:
            dropped[switch] = list(dict.fromkeys(lost))
    return dropped


def learn_defaults(dropped: dict[str, list[str]]) -> None:
    """Carry ``dropped`` (see :func:`dropped_defaults`) in every later launch of this process."""
    for switch, names in dropped.items():
        _learned_defaults.setdefault(switch, set()).update(names)
