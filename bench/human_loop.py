"""Human in the loop: what a run waiting for a person holds, and what the live view costs.

    .venv/bin/python bench/human_loop.py [--window 8] [--samples 5] [--waiting 4] [--no-deflate]

One in-process ``Runtime`` (SQLite store in a temp dir, one Chromium, ``context_prewarm=0`` so
that no spare context blurs the deltas), pages served on 127.0.0.1 by this script. Stealth is on
as shipped, but every context is the same visitor (``--seed``, passed as ``identity_seed`` by
wrapping this runtime's ``pool.new_context``): otherwise each run gets a random screen size
(1920x963 … 2560x1328 were seen) and the frame sizes of the cases are not comparable.

1. **Memory of a waiting run.** PSS of the worker by part (Chromium tree, Playwright driver, this
   Python process; ``pool.worker_memory_mb``) with no run, while one run waits in a handoff on a
   simple page (its context and page open), and while ``--waiting`` runs wait at once (runs in
   threads on the one runtime, as ``--pool threads`` does). Each state: the median of
   ``--samples`` samples 0.5 s apart. Printed: the medians and the delta per waiting run.
2. **The live view while a person watches.** One run waits on each of three pages — still, a
   counter updated by JS every 100 ms, a CSS spinner — and for each, two windows of ``--window``
   seconds: nobody watching, then one viewer (the live view's own client path: one-time link,
   cookie, ``/ws``, permessage-deflate offered as a browser does unless ``--no-deflate``).
   Counted: frames and bytes the viewer received (message payload and, separately, bytes off the
   socket), and CPU seconds (``/proc/<pid>/stat`` utime+stime) of the Chromium tree, the driver
   and this Python process — the viewer's own client work (its thread's CPU) shown apart, since
   in real life it runs in the person's browser, not in the worker.

Every run ends through Give up on its socket (``timeout_s`` of the handoffs is only a backstop),
and the runtime is stopped. The script ends by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from pool import (  # bench/pool.py (this script's directory)
    descendants,
    quiet_logs,
    worker_memory_mb,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.* helpers

from browserq.execute.runtime import Runtime
from browserq.live import frames
from browserq.stealth.host import chrome_version_of
from tests.conftest import make_settings, template
from tests.support.http import html_pages, serve_http

HANDOFF_TIMEOUT_S = 120  # a backstop only: every run is given up through its socket
HEAD = '<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>bench</title></head>'
FORM = ('<h1>Please confirm</h1><p>A simple page a run waits on: a heading, some text, a button.</p>'
        '<button id="ok" style="width:200px;height:60px">I am human</button>')
PAGES = {
    "/still": HEAD + "<body>" + FORM + "</body></html>",
    "/counter": HEAD + "<body>" + FORM + '<p id="n" style="font-size:40px">0</p><script>let n = 0;'
    "setInterval(() => { document.getElementById('n').textContent = ++n; }, 100);</script></body></html>",
    "/spinner": HEAD + "<style>@keyframes spin { to { transform: rotate(360deg); } } #s { width: 60px; "
    "height: 60px; border: 8px solid #ddd; border-top-color: #36c; border-radius: 50%; "
    "animation: spin 1s linear infinite; }</style><body>" + FORM + '<div id="s"></div></body></html>',
}
CLK = os.sysconf("SC_CLK_TCK")


# --- /proc ------------------------------------------------------------------------------------------
def cpu_by_part() -> dict[str, float]:
    """CPU seconds (utime + stime) so far of this process (all threads), the driver and Chromium."""
    parts = {"python": 0.0, "driver": 0.0, "chromium": 0.0}
    me = os.getpid()
    for pid in descendants(me):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / CLK  # utime, stime (fields 14, 15)
        part = "python" if pid == me else "driver" if b"playwright/driver" in cmdline else "chromium"
        parts[part] += seconds
    return parts


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem = next((int(line.split()[1]) // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")), 0)
    return f"{os.cpu_count()} CPUs ({cpu}), {mem / 1024:.0f} GB RAM, Linux {platform.release()}"


# --- runs -------------------------------------------------------------------------------------------
def waiting_template(url: str) -> Any:
    return template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{url}"}}
          - {{id: ask, action: handoff, message: "bench: nobody will solve this", timeout_s: {HANDOFF_TIMEOUT_S}}}
    """)


def start_run(runtime: Runtime, loaded: Any) -> tuple[threading.Thread, list[Any]]:
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(runtime.run_loaded(loaded)), daemon=True)
    thread.start()
    return thread, done


def wait_for(what: Callable[[], Any], timeout_s: float, about: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = what()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {about}")


def waiting_ids(runtime: Runtime) -> set[str]:
    return {r.id for r in runtime.store.runs.list_runs(limit=50, status="waiting_for_human")}


def link_for(runtime: Runtime, run_id: str) -> str:
    link = runtime.store.handoffs.mint_live_token(run_id, purpose="bench", ttl_s=60)
    assert link, f"no live-view link for run {run_id}"
    return link


async def give_up(link: str) -> None:
    """Open the live view through its link and press Give up; returns once the view says it ended."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            assert page.status == 200, page.status
        async with http.ws_connect(link.split("?", 1)[0] + "/ws") as ws:
            await ws.send_json({"type": "give_up"})
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                message = await ws.receive(timeout=max(0.1, deadline - time.monotonic()))
                if message.type != aiohttp.WSMsgType.TEXT or json.loads(message.data).get("type") == "ended":
                    return


def end_runs(runtime: Runtime, runs: list[tuple[threading.Thread, list[Any]]], ids: set[str]) -> None:
    async def all_of() -> None:
        await asyncio.gather(*(give_up(link_for(runtime, run_id)) for run_id in ids))

    asyncio.run(all_of())
    for thread, done in runs:
        thread.join(30)
        assert done and done[0].error_code == "HUMAN_GAVE_UP", done


# --- 1. memory ----------------------------------------------------------------------------------------
def sample_memory(n: int) -> dict[str, float]:
    samples = []
    for i in range(n):
        if i:
            time.sleep(0.5)
        samples.append(worker_memory_mb())
    return {part: statistics.median(s[part] for s in samples) for part in samples[0]}


def bench_memory(runtime: Runtime, site: str, samples: int, many: int) -> dict[str, Any]:
    loaded = waiting_template(f"{site}/still")
    time.sleep(2)
    states = {"no run": sample_memory(samples)}
    runs = [start_run(runtime, loaded)]
    first = wait_for(lambda: waiting_ids(runtime), 60, "the first run to wait")
    time.sleep(1.5)
    states["1 waiting"] = sample_memory(samples)
    runs += [start_run(runtime, loaded) for _ in range(many - 1)]
    ids = wait_for(lambda: w if len(w := waiting_ids(runtime)) >= many else None, 90, f"{many} runs to wait")
    assert first <= ids
    time.sleep(1.5)
    states[f"{many} waiting"] = sample_memory(samples)
    end_runs(runtime, runs, ids)
    base = states["no run"]
    delta = {
        "1": {p: states["1 waiting"][p] - base[p] for p in base},
        str(many): {p: (states[f"{many} waiting"][p] - base[p]) / many for p in base},
    }
    return {"states": states, "per_run": delta, "waiting": many, "samples": samples}


# --- 2. the live view ---------------------------------------------------------------------------------
def window_cpu(during: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    before, started = cpu_by_part(), time.monotonic()
    result = during()
    after, elapsed = cpu_by_part(), time.monotonic() - started
    return {part: (after[part] - before[part]) / elapsed for part in before} | {"elapsed_s": elapsed}, result


async def watch(link: str, window_s: float, deflate: bool, measure: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """One viewer: open the link, connect, take the first frame, settle 1 s, then count for
    ``window_s`` (CPU measured around that window by ``measure``); then Give up."""
    got: dict[str, Any] = {"frames": 0, "payload_bytes": 0, "wire_bytes": 0, "jpeg_bytes": []}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            assert page.status == 200, page.status
        async with http.ws_connect(link.split("?", 1)[0] + "/ws", compress=15 if deflate else 0) as ws:
            got["deflate"] = bool(ws.compress)
            wire = [0]
            protocol = ws._conn.protocol  # count the bytes read off the socket (after the upgrade)
            received = protocol.data_received

            def counting(data: bytes) -> None:
                wire[0] += len(data)
                received(data)

            protocol.data_received = counting
            first = await ws.receive_json(timeout=15)
            assert first["type"] == "frame", first
            got["viewport"] = (first.get("w"), first.get("h"))
            settle = time.monotonic() + 1.0
            while (left := settle - time.monotonic()) > 0:
                try:
                    await ws.receive(timeout=left)
                except TimeoutError:
                    break
            before_cpu, before_thread, wire[0] = measure(), time.thread_time(), 0
            started = time.monotonic()
            deadline = started + window_s
            while (left := deadline - time.monotonic()) > 0:
                try:
                    message = await ws.receive(timeout=left)
                except TimeoutError:
                    break
                if message.type != aiohttp.WSMsgType.TEXT:
                    raise RuntimeError(f"the live view closed: {message}")
                frame = json.loads(message.data)
                if frame.get("type") == "frame":
                    got["frames"] += 1
                    got["payload_bytes"] += len(message.data)
                    got["jpeg_bytes"].append(len(frame["data"]) * 3 // 4)
            elapsed = time.monotonic() - started
            after_cpu, got["wire_bytes"] = measure(), wire[0]
            got["viewer_cpu"] = (time.thread_time() - before_thread) / elapsed
            got["cpu"] = {part: (after_cpu[part] - before_cpu[part]) / elapsed for part in before_cpu}
            got["elapsed_s"] = elapsed
            await ws.send_json({"type": "give_up"})
            end = time.monotonic() + 15
            while time.monotonic() < end:
                message = await ws.receive(timeout=max(0.1, end - time.monotonic()))
                if message.type != aiohttp.WSMsgType.TEXT or json.loads(message.data).get("type") == "ended":
                    break
    return got


def bench_live(runtime: Runtime, site: str, window_s: float, deflate: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("still", "counter", "spinner"):
        run = start_run(runtime, waiting_template(f"{site}/{kind}"))
        [run_id] = wait_for(lambda: waiting_ids(runtime), 60, f"the {kind} run to wait")
        time.sleep(1.0)
        idle, _ = window_cpu(lambda: time.sleep(window_s))
        idle.pop("elapsed_s")
        watched = asyncio.run(watch(link_for(runtime, run_id), window_s, deflate, cpu_by_part))
        watched["cpu"]["python"] -= watched["viewer_cpu"]  # the worker's share of this process
        run[0].join(30)
        assert run[1] and run[1][0].error_code == "HUMAN_GAVE_UP", run[1]
        out[kind] = {"nobody": idle, "watched": watched}
        print(f"  {kind}: {watched['frames']} frames in {watched['elapsed_s']:.1f} s", file=sys.stderr)
    return out


# --- output -------------------------------------------------------------------------------------------
def report(memory: dict[str, Any], lives: dict[str, dict[str, Any]], window_s: float) -> None:
    parts = ("chromium", "driver", "python", "total")
    print(f"\n1. Memory (PSS, MB; median of {memory['samples']} samples per state)")
    print(f"   {'state':<12}" + "".join(f"{p:>10}" for p in parts))
    for state, values in memory["states"].items():
        print(f"   {state:<12}" + "".join(f"{values[p]:>10.1f}" for p in parts))
    for n, values in memory["per_run"].items():
        label = f"per run ({n})"
        print(f"   {label:<12}" + "".join(f"{values[p]:>+10.1f}" for p in parts))

    for label, live in lives.items():
        print(f"\n2. Live view ({label}), one viewer, {window_s:g} s windows (CPU % of one core)")
        report_live(live)


def report_live(live: dict[str, Any]) -> None:
    header = (f"   {'page':<9}{'who':<9}{'frames/s':>9}{'KB/s msg':>10}{'KB/s wire':>10}{'JPEG KB':>9}"
              f"{'chromium':>10}{'driver':>8}{'python':>8}{'worker':>8}{'viewer':>8}")
    print(header)
    for kind, case in live.items():
        idle, watched = case["nobody"], case["watched"]
        total_idle = sum(idle.values())
        print(f"   {kind:<9}{'nobody':<9}{'-':>9}{'-':>10}{'-':>10}{'-':>9}"
              f"{idle['chromium'] * 100:>10.1f}{idle['driver'] * 100:>8.1f}{idle['python'] * 100:>8.1f}"
              f"{total_idle * 100:>8.1f}{'-':>8}")
        cpu, elapsed = watched["cpu"], watched["elapsed_s"]
        jpeg = statistics.median(watched["jpeg_bytes"]) / 1024 if watched["jpeg_bytes"] else 0.0
        print(f"   {'':<9}{'watched':<9}{watched['frames'] / elapsed:>9.1f}"
              f"{watched['payload_bytes'] / elapsed / 1024:>10.1f}{watched['wire_bytes'] / elapsed / 1024:>10.1f}"
              f"{jpeg:>9.1f}{cpu['chromium'] * 100:>10.1f}{cpu['driver'] * 100:>8.1f}{cpu['python'] * 100:>8.1f}"
              f"{sum(cpu.values()) * 100:>8.1f}{watched['viewer_cpu'] * 100:>8.1f}")
    any_case = next(iter(live.values()))["watched"]
    sizes = sorted({"x".join(map(str, case["watched"]["viewport"])) for case in live.values()})
    print(f"   viewport {', '.join(sizes)}; permessage-deflate "
          f"{'on' if any_case['deflate'] else 'off'}; 'python' = this process minus the viewer client's "
          "thread; 'worker' = chromium + driver + python; 'viewer' = the client (a person's browser in real life)")


def one_visitor(runtime: Runtime, seed: str) -> None:
    """Every context of this runtime the same stealth visitor (same screen size)."""
    new_context = runtime.pool.new_context

    async def same_visitor(*, identity_seed: str | None = None, **options: Any) -> Any:
        return await new_context(identity_seed=identity_seed or seed, **options)

    runtime.pool.new_context = same_visitor  # type: ignore[method-assign]


def main() -> None:
    quiet_logs()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=8.0, help="seconds per live-view window")
    parser.add_argument("--samples", type=int, default=5, help="PSS samples per memory state")
    parser.add_argument("--waiting", type=int, default=4, help="runs waiting at once (memory)")
    parser.add_argument("--no-deflate", action="store_true", help="viewer does not offer permessage-deflate")
    parser.add_argument("--seed", default="bench-visitor", help="stealth identity seed of every context")
    parser.add_argument("--json", action="store_true", help="also print everything as JSON")
    parser.add_argument("--compare-frame-cap", action="store_true",
                        help="measure the live view twice: frames cast at the page's full size and rate, then "
                             "capped (browserq.live.frames.MAX_FRAME_WIDTH/HEIGHT, MAX_FPS)")
    args = parser.parse_args()

    tmpdir = tempfile.TemporaryDirectory(prefix="bq-bench-human-", ignore_cleanup_errors=True)
    settings = make_settings(Path(tmpdir.name), context_prewarm=0)
    executable = settings.resolve_chromium() or "?"
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    with tmpdir, serve_http(html_pages(PAGES)) as host, Runtime(settings) as runtime:
        site = f"http://{host}"
        one_visitor(runtime, args.seed)
        # warm-up: one whole handoff (the live view's server starts at the first one; Chromium's
        # helper processes exist before the baseline is taken)
        warm = start_run(runtime, waiting_template(f"{site}/still"))
        end_runs(runtime, [warm], wait_for(lambda: waiting_ids(runtime), 60, "the warm-up run to wait"))
        print("memory ...", file=sys.stderr)
        memory = bench_memory(runtime, site, args.samples, args.waiting)
        print("live view ...", file=sys.stderr)
        cap = (frames.MAX_FRAME_WIDTH, frames.MAX_FRAME_HEIGHT, frames.MIN_FRAME_INTERVAL_S)
        caps = {f"frames capped at {cap[0]}x{cap[1]}, {frames.MAX_FPS}/s": cap}
        if args.compare_frame_cap:
            caps = {"frames at the page's full size and rate": (100_000, 100_000, 0.0), **caps}
        lives = {}
        for label, (width, height, interval) in caps.items():
            frames.MAX_FRAME_WIDTH, frames.MAX_FRAME_HEIGHT, frames.MIN_FRAME_INTERVAL_S = width, height, interval
            lives[label] = bench_live(runtime, site, args.window, not args.no_deflate)
    load_after = os.getloadavg()

    print(f"Human in the loop — {started}")
    print(f"machine: {machine()}; load average (1 min) {load_before[0]:.1f} at start, {load_after[0]:.1f} at end")
    print(f"browser: {executable}: {chrome_version_of(executable) if executable != '?' else '?'}; "
          f"aiohttp {aiohttp.__version__}; Python {platform.python_version()}")
    print("runtime: in-process, SQLite, context_prewarm=0 (no spare context), handoff without `until` "
          f"on a page served on 127.0.0.1; runs waiting at once run in threads of one Runtime; stealth on, "
          f"every context the visitor {args.seed!r}")
    report(memory, lives, args.window)
    if args.json:
        for live in lives.values():
            for case in live.values():
                case["watched"].pop("jpeg_bytes", None)
        print(json.dumps({"memory": memory, "live": lives}, indent=2, default=str))


if __name__ == "__main__":
    main()
