"""The live view's one page: the frames, the message, a countdown, Continue and Give up.

No framework and no inline script without the response's nonce (the CSP allows nothing else).
Coordinates are sent in the page's CSS pixels. A frame may be at device pixels or scaled down (a
screencast frame), so each frame message says the CSS viewport it shows (``w``/``h``) and a click
on the shown image maps by that; the image's natural size is the fallback.
"""

from __future__ import annotations

import html
import json

_STYLE = """
body{margin:0;font:15px/1.4 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}
header{padding:14px 20px;background:#1d2330;color:#fff;display:flex;gap:16px;align-items:center}
header h1{font-size:16px;margin:0;font-weight:600}#left{margin-left:auto;font-variant-numeric:tabular-nums}
main{padding:16px 20px}.msg{background:#fff3cd;border:1px solid #e6c86e;padding:10px 14px;border-radius:6px}
.until{color:#555;margin:6px 0 12px}#screen{display:block;box-sizing:border-box;max-width:100%;max-height:calc(100vh - 240px);
border:1px solid #c9ced6;border-radius:4px;background:#fff;box-shadow:0 1px 4px #0000001f;cursor:crosshair;
outline:none}#screen:not([src]){width:100%;aspect-ratio:16/9;background:#e9ecf1}
#screen:focus{border-color:#3b6fd8;box-shadow:0 0 0 3px #3b6fd833}
.bar{display:flex;gap:10px;margin:14px 0;align-items:center}button{font:inherit;padding:8px 18px;border-radius:6px;
border:1px solid #888;background:#fff;cursor:pointer}#continue{background:#1f7a3d;color:#fff;border-color:#1f7a3d}
#status{color:#555;margin-left:6px}#moved{background:#e3ecfb;border:1px solid #7f9fd8;padding:10px 14px;border-radius:6px;margin:0 0 12px}
"""

_SCRIPT = """
const info = JSON.parse(document.getElementById('info').textContent);
const img = document.getElementById('screen'), status = document.getElementById('status');
const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + location.pathname + '/ws');
const send = (m) => { if (ws.readyState === 1) ws.send(JSON.stringify(m)); };
ws.onopen = () => { status.textContent = 'connected: click the screen to act, type while it has focus'; };
let size = null;  // the CSS viewport the shown frame is of
ws.onmessage = (e) => { const m = JSON.parse(e.data);
  if (m.type === 'frame') { img.src = 'data:image/jpeg;base64,' + m.data; size = m.w && m.h ? {w: m.w, h: m.h} : null; }
  else if (m.type === 'ended') { status.textContent = 'handoff ended: ' + m.reason; ended = !m.follow; ws.close(); if (m.follow) follow(); }
  else if (m.type === 'error') status.textContent = 'refused: ' + m.message; };
let ended = false, following = false;
ws.onclose = () => { if (ended) return; if (!status.textContent.startsWith('handoff ended')) status.textContent = 'disconnected'; follow(); };
const moved = document.getElementById('moved'), where = document.getElementById('where');
const elsewhere = ' If it does not, get a new link: browserq live ' + info.run + " (or from the run's webhook).";
const say = (text) => { moved.hidden = false; moved.firstChild.textContent = text; };
const follow = () => { if (following) return; following = true;
  say("The run's worker stopped. The run will resume on another worker and wait for you again; this page will move you there." + (info.follow ? '' : elsewhere));
  if (info.follow) ask(); };
const ask = async () => {
  try { const r = await fetch(location.pathname + '/next', {method: 'POST', cache: 'no-store',
      headers: {'Content-Type': 'application/json'}, body: JSON.stringify({follow: info.follow})});
    const m = await r.json();
    if (m.state === 'moved') { where.textContent = 'The run waits for you again: moving you there…'; location.replace(m.url); return; }
    if (m.state === 'ended') { say('The run ended (' + m.status + '): there is nothing left to do here.'); where.textContent = ''; return; }
    if (m.state === 'here') { say('This page lost its connection to the run: reload it.'); where.textContent = ''; return; }
    if (m.state === 'refused') { say("The run's worker stopped, and this page can no longer follow the run." + elsewhere); where.textContent = ''; return; }
    where.textContent = 'Waiting for another worker to take the run over…';
  } catch (e) { where.textContent = 'No live view answers at this address yet; still asking.' + elsewhere; }
  setTimeout(ask, 2000); };
const at = (e) => { const r = img.getBoundingClientRect(), w = size ? size.w : img.naturalWidth, h = size ? size.h : img.naturalHeight;
  return {x: (e.clientX - r.left - img.clientLeft) * w / img.clientWidth, y: (e.clientY - r.top - img.clientTop) * h / img.clientHeight}; };
img.addEventListener('click', (e) => { img.focus(); send({type: 'click', ...at(e)}); });
img.addEventListener('wheel', (e) => { e.preventDefault(); send({type: 'wheel', ...at(e), dx: e.deltaX, dy: e.deltaY}); }, {passive: false});
img.addEventListener('keydown', (e) => { e.preventDefault();
  if (e.key.length === 1 && !e.ctrlKey && !e.metaKey) send({type: 'text', text: e.key}); else send({type: 'key', key: e.key}); });
document.getElementById('continue').onclick = () => send({type: 'continue'});
document.getElementById('giveup').onclick = () => { if (confirm('Give up? The run fails with HUMAN_GAVE_UP.')) send({type: 'give_up'}); };
const left = document.getElementById('left'), end = Date.parse(info.deadline);
setInterval(() => { const s = Math.max(0, Math.round((end - Date.now()) / 1000));
  left.textContent = Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0') + ' left'; }, 1000);
"""


def live_page(*, run_id: str, message: str, until: str | None, deadline: str, nonce: str,
              view_only: bool = False, follow: str | None = None) -> str:
    """The page for one handoff (every value escaped; the data travels as JSON, not as code).
    ``view_only``: a running run, watched: no buttons, nothing forwarded. ``follow``: the page's
    secret to find the run's next wait if its worker dies (see the server's ``/next``)."""
    data = json.dumps({"deadline": deadline, "run": run_id, "follow": follow}).replace("<", "\\u003c")
    done = f"It goes on by itself once {html.escape(until)}; or press Continue." if until else (
        "Press Continue when you are done.")
    if view_only:
        done = "View only: input is taken while the run waits for a person."
    hidden = " hidden" if view_only else ""
    waits = "is running" if view_only else "waits for you"
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>browserq: a run needs you</title><style nonce="{nonce}">{_STYLE}</style></head><body>
<header><h1>browserq · run {html.escape(run_id[:12])} {waits}</h1><span id="left"></span></header>
<main><div id="moved" role="status" hidden><span></span> <span id="where"></span></div><div class="msg">{html.escape(message)}</div><div class="until">{done}</div>
<img id="screen" tabindex="0" alt="the run's page">
<div class="bar"><button id="continue"{hidden}>Continue</button><button id="giveup"{hidden}>Give up</button>
<span id="status">connecting…</span></div></main>
<script type="application/json" id="info">{data}</script>
<script nonce="{nonce}">{_SCRIPT}</script></body></html>"""


__all__ = ["live_page"]
