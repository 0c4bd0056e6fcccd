"""stealth: a coherent browser identity for a browserq context.

    from browserq import stealth

    host = await stealth.probe_host(browser)                       # once per launch
    fp = stealth.Fingerprint.generate("acct-42", chrome_version=host.chrome_version,
                                      region="de", host=host)
    context = await browser.new_context(**stealth.context_options(fp))
    await stealth.apply(context, fp, host=host)
    page = await stealth.new_page(context)

Launch the browser with ``args=[..., *stealth.launch_args(pool_fp)]`` and
``ignore_default_args=stealth.ignore_default_args()``. README.md in this package lists what each
layer fixes, what stays detectable (the CDP tells) and why.
"""

from browserq.stealth.apply import (
    apply,
    context_options,
    ignore_default_args,
    init_script,
    launch_args,
    new_page,
    probe_host,
    ready,
    user_agent_override,
)
from browserq.stealth.fingerprint import Fingerprint
from browserq.stealth.hints import accept_language_header, brand_list
from browserq.stealth.host import HostInfo, chrome_version_of
from browserq.stealth.human import move_and_click, pause, type_like_human
from browserq.stealth.regions import resolve_region

__all__ = [
    "Fingerprint",
    "HostInfo",
    "accept_language_header",
    "apply",
    "brand_list",
    "chrome_version_of",
    "context_options",
    "ignore_default_args",
    "init_script",
    "launch_args",
    "move_and_click",
    "new_page",
    "pause",
    "probe_host",
    "ready",
    "resolve_region",
    "type_like_human",
    "user_agent_override",
]
