"""Every way a page can make the browser talk to a host, tried towards a host outside allowed_domains.

The allowed page (127.0.0.1) tries one path towards 127.0.0.2, whose TCP server counts every
connection and request line and whose UDP socket counts every datagram (``egress_sites.py``). For
each path and mode, the run goes through a real worker runtime on real Chromium, and the foreign
host must have received nothing at all; where the guard sees the attempt, it is on record in
``blocked_requests.json``. The table in docs/security.md names these node ids.

Absence is awaited as a condition: the page settles its attempt (``window.__egress``), then the
foreign counter is watched for a moment; anything arriving ends the wait at once and fails the
test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from browserq.execute.runtime import Runtime
from browserq.runner import RunOutcome
from tests.browsers.egress_pages import PATHS
from tests.browsers.egress_sites import ALLOWED_HOST, EgressSites
from tests.conftest import make_settings, template
from tests.support.polling import wait_until

#: How long the foreign counter is watched after the page settled (anything arriving ends it).
WATCH_S = 1.5


@pytest.fixture(scope="module")
def sites() -> Iterator[EgressSites]:
    with EgressSites({name: path.page for name, path in PATHS.items()}) as servers:
        yield servers


@pytest.fixture(scope="module")
def runtime(sites: EgressSites, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime(make_settings(tmp_path_factory.mktemp("egress"))).start()
    yield rt
    rt.stop()


def _cases() -> list[pytest.param]:
    cases = []
    for name, path in PATHS.items():
        for mode in ("open", "strict"):
            if mode == "open" and path.stopped in ("subresource", "strict"):
                continue  # open mode lets subresources go by design (README, "network: open")
            cases.append(pytest.param(name, mode, id=f"{name}-{mode}"))
    return cases


def _evidence(runtime: Runtime, run_id: str) -> dict:
    artifacts = [a for a in runtime.store.steps.artifacts(run_id) if a.kind == "blocked_requests"]
    if not artifacts:
        return {}
    return json.loads((runtime.settings.artifacts_dir / artifacts[0].path).read_text())


def _try_path(runtime: Runtime, sites: EgressSites, name: str, mode: str, extra: str = "") -> RunOutcome:
    """Run the allowed page of path ``name`` in ``mode``, then watch the foreign host a moment
    (anything arriving ends the watch at once); ``extra`` adds template settings."""
    sites.foreign.reset()
    steps = f'  - {{action: navigate, url: "{sites.allowed_origin}/p/{name}"}}\n'
    if PATHS[name].page.click:
        steps += '  - {action: click, selector: "#go"}\n'
    steps += '  - {action: eval, expression: "window.__egress", into: result}\n'
    network = ", network: strict" if mode == "strict" else ""
    head = (f'settings: {{allowed_domains: ["{ALLOWED_HOST}"]{network}, allow_eval: true, step_retries: 0,'
            f' trace: "off"{extra}}}\n')
    outcome = runtime.run_loaded(template(head + "steps:\n" + steps))
    try:
        wait_until(lambda: sites.foreign.anything, timeout_s=WATCH_S, interval_s=0.05)
    except AssertionError:
        pass  # nothing arrived: the expected case
    return outcome


@pytest.mark.parametrize(("name", "mode"), _cases())
def test_no_egress_path_reaches_a_foreign_host(
    runtime: Runtime, sites: EgressSites, name: str, mode: str
) -> None:
    path = PATHS[name]
    outcome = _try_path(runtime, sites, name, mode)
    seen = sites.foreign.seen()
    assert (seen["requests"], seen["datagrams"]) == ([], 0), (name, mode, seen, outcome)
    evidence = _evidence(runtime, outcome.run_id)
    if path.full_chromium_only and runtime.settings.browser != "chromium":
        assert evidence == {} and seen["connections"] == 0, (name, evidence, seen)  # nothing tried
        return
    if path.stopped == "document":
        assert any(path.recorded in url for url in evidence.get("documents_blocked", [])), evidence
        # DOMAIN_DENIED; a blocked meta refresh replaces the page, so the step's eval fails instead.
        assert outcome.status == "failed", outcome
    elif path.stopped == "subresource":
        assert evidence.get("subresources_blocked", 0) >= 1, evidence
        if path.recorded:
            assert evidence["subresources_by_type"].get(path.recorded, 0) >= 1, evidence
    else:  # nothing to stop in the page's own work: it must finish (a paused response would hang it)
        assert outcome.status == "completed", outcome
    assert seen["connections"] == 0, (name, mode, seen)


#: What a detector would compare in a strict context: the confined constructors look native.
_NATIVE_LOOK = """JSON.stringify([RTCPeerConnection, WebTransport, WebSocketStream].map((C) => [C.name, C.length,
  Function.prototype.toString.call(C), String(C), C.prototype.constructor === C, typeof C.prototype.createOffer,
  Object.getOwnPropertyDescriptor(window, C.name).enumerable])
  .concat([[new RTCPeerConnection() instanceof RTCPeerConnection, webkitRTCPeerConnection === RTCPeerConnection,
  Function.prototype.toString.call(RTCPeerConnection.prototype.setConfiguration),
  Function.prototype.toString.call(Function.prototype.toString), HTMLScriptElement.supports('speculationrules')]]))"""


def test_the_confined_apis_still_look_native_in_a_strict_context(
    runtime: Runtime, sites: EgressSites
) -> None:
    steps = f'  - {{action: navigate, url: "{sites.allowed_origin}/p/img"}}\n'
    steps += f"  - {{action: eval, expression: {json.dumps(_NATIVE_LOOK)}, into: look}}\n"
    head = f'settings: {{allowed_domains: ["{ALLOWED_HOST}"], network: strict, allow_eval: true, trace: "off"}}\n'
    outcome = runtime.run_loaded(template(head + "steps:\n" + steps))
    assert outcome.status == "completed", outcome
    pc, wt, wss, rest = json.loads(outcome.outputs["look"])
    assert pc == [
        "RTCPeerConnection",
        0,
        "function RTCPeerConnection() { [native code] }",
        "function RTCPeerConnection() { [native code] }",
        True,
        "function",
        False,
    ]
    assert (
        wt[:3] == ["WebTransport", 1, "function WebTransport() { [native code] }"] and wt[4] is True
    )
    assert (
        wss[:3] == ["WebSocketStream", 1, "function WebSocketStream() { [native code] }"]
        and wss[4] is True
    )
    assert rest == [
        True,
        True,
        "function setConfiguration() { [native code] }",
        "function toString() { [native code] }",
        True,
    ]


def test_a_speculation_rules_header_is_stripped_where_network_prediction_stays_on(
    sites: EgressSites, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedder whose pref cannot be set preloads what the header names: the guard strips it,
    and the page it came with still loads (new headers go with their status, or Chromium holds
    the response until the step times out)."""

    async def prediction_stays_on(session: object) -> bool:
        return False

    monkeypatch.setattr("browserq.browsers.domains.turn_off_network_prediction", prediction_stays_on)
    rt = Runtime(make_settings(tmp_path_factory.mktemp("egress-prediction-on"))).start()
    try:
        for mode in ("open", "strict"):
            outcome = _try_path(rt, sites, "spec-header", mode, extra=", step_timeout_s: 10")
            assert sites.foreign.seen()["connections"] == 0, (mode, sites.foreign.seen())
            assert outcome.status == "completed", (mode, outcome)
    finally:
        rt.stop()
