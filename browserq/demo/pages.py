"""HTML of the demo site. Small, self-contained pages: no external resources, no internet.

Every function returns a complete HTML document as ``str``. Dynamic values are escaped here.
"""

from __future__ import annotations

from html import escape

from browserq.demo.quotes import QUOTE_PAGES, QUOTES, Quote, quotes_on_page

#: How many ``.item`` elements /scroll starts with, adds per load, and ends at.
SCROLL_BATCH = 10
SCROLL_TOTAL = 50
#: Simulated network delay of one /scroll batch, in milliseconds.
SCROLL_LOAD_DELAY_MS = 250
#: How long /widgets waits before adding ``#delayed``, in milliseconds.
DELAYED_BUTTON_MS = 600

_STYLE = """
body { font-family: sans-serif; margin: 2rem auto; max-width: 48rem; padding: 0 1rem; color: #222; }
nav a { margin-right: .75rem; }
.error { color: #b00020; }
label { display: block; margin-top: .6rem; }
"""


def _t(value: object) -> str:
    """Escape text content (quotes are left alone so raw HTML stays readable)."""
    return escape(str(value), quote=False)


def _a(value: object) -> str:
    """Escape an attribute value."""
    return escape(str(value), quote=True)


def document(title: str, body: str, *, head: str = "", nav: bool = True) -> str:
    """Wrap ``body`` in a full page. ``rel=icon href=data:,`` stops favicon requests."""
    navbar = (
        '<nav><a href="/">Home</a><a href="/quotes/">Quotes</a><a href="/login">Login</a>'
        '<a href="/scroll">Scroll</a><a href="/widgets">Widgets</a></nav>'
        if nav
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{_t(title)}</title>\n<style>{_STYLE}</style>\n{head}</head>\n"
        f"<body>\n{navbar}\n{body}\n</body>\n</html>\n"
    )


# --- index ---------------------------------------------------------------------------------------


def index_page() -> str:
    links = [
        ("/quotes/", "Quotes (5 pages, 50 quotes)"),
        ("/login", "Login (demo / s3cret-pass)"),
        ("/account", "Account and contact form (login first)"),
        ("/scroll", "Infinite scroll (10 to 50 items)"),
        ("/widgets", "Widgets playground"),
        ("/frame", "Frame page (embedded by /widgets)"),
        ("/slow?ms=1500", "Slow response (1.5 s)"),
        ("/status/404", "HTTP status 404"),
        ("/status/500", "HTTP status 500"),
        ("/flaky?key=demo&amp;fail=2", "Flaky (500 twice, then 200)"),
        ("/storage", "Storage page (cookies, localStorage, IndexedDB)"),
        ("/console-error", "Console error and uncaught exception"),
    ]
    items = "\n".join(f'  <li><a href="{href}">{_t(label)}</a></li>' for href, label in links)
    return document(
        "browserq demo site",
        f'<h1 id="title">browserq demo site</h1>\n'
        f"<p>An offline playground for browserq templates and tests.</p>\n"
        f'<ul id="links">\n{items}\n</ul>',
    )


def not_found_page(path: str) -> str:
    return document("Not found", f'<h1 id="not-found">Not found</h1>\n<p>No page at {_t(path)}</p>')


# --- quotes --------------------------------------------------------------------------------------


def _quote_blocks(quotes: tuple[Quote, ...]) -> list[str]:
    blocks = []
    for quote in quotes:
        tags = "".join(
            f'<a class="tag" href="/quotes/tag/{_a(tag)}/">{_t(tag)}</a>' for tag in quote.tags
        )
        blocks.append(
            '<div class="quote">\n'
            f'  <span class="text">{_t(quote.display_text)}</span>\n'
            f'  <span>by <small class="author">{_t(quote.author)}</small></span>\n'
            f'  <div class="tags">Tags: {tags}</div>\n'
            "</div>"
        )
    return blocks


def quotes_page(page: int) -> str:
    blocks = _quote_blocks(quotes_on_page(page))
    pager = []
    if page > 1:
        pager.append(f'<li class="previous"><a href="/quotes/page/{page - 1}/">Previous</a></li>')
    if page < QUOTE_PAGES:
        pager.append(f'<li class="next"><a href="/quotes/page/{page + 1}/">Next</a></li>')
    pager_html = f'<ul class="pager">{"".join(pager)}</ul>'
    return document(
        f"Quotes - page {page}",
        f'<h1>Quotes to Scrape</h1>\n<p id="page-number">Page {page} of {QUOTE_PAGES}</p>\n'
        + "\n".join(blocks)
        + f"\n{pager_html}",
    )


def tag_page(tag: str) -> str:
    blocks = _quote_blocks(tuple(q for q in QUOTES if tag in q.tags))
    return document(
        f"Quotes tagged {tag}",
        f'<h1>Quotes to Scrape</h1>\n<p id="tag-name">Viewing tag: {_t(tag)}</p>\n'
        + "\n".join(blocks),
    )


# --- login and account ---------------------------------------------------------------------------


def login_page(error: str | None = None, username: str = "") -> str:
    error_html = f'<p class="error">{_t(error)}</p>\n' if error else ""
    return document(
        "Login",
        "<h1>Login</h1>\n"
        f"{error_html}"
        '<form id="login-form" method="post" action="/login">\n'
        '  <label for="username">Username</label>\n'
        f'  <input id="username" name="username" type="text" autocomplete="username" value="{_a(username)}">\n'
        '  <label for="password">Password</label>\n'
        '  <input id="password" name="password" type="password" autocomplete="current-password">\n'
        '  <p><button type="submit">Log in</button></p>\n'
        "</form>",
    )


def account_page(user: str, error: str | None = None) -> str:
    error_html = f'<p class="error">{_t(error)}</p>\n' if error else ""
    return document(
        "Account",
        f'<h1 id="welcome">Welcome, {_t(user)}</h1>\n'
        '<p><a id="logout" href="/logout">Log out</a></p>\n'
        "<h2>Contact us</h2>\n"
        f"{error_html}"
        '<form id="contact-form" method="post" action="/account/contact">\n'
        '  <label for="name">Name</label>\n'
        '  <input id="name" name="name" type="text">\n'
        '  <label for="email">Email</label>\n'
        '  <input id="email" name="email" type="email">\n'
        '  <label for="topic">Topic</label>\n'
        '  <select id="topic" name="topic">\n'
        '    <option value="support">Support</option>\n'
        '    <option value="sales">Sales</option>\n'
        '    <option value="other">Other</option>\n'
        "  </select>\n"
        '  <fieldset id="priority"><legend>Priority</legend>\n'
        '    <label><input id="priority-low" type="radio" name="priority" value="low"> Low</label>\n'
        '    <label><input id="priority-normal" type="radio" name="priority" value="normal" checked> Normal</label>\n'
        '    <label><input id="priority-high" type="radio" name="priority" value="high"> High</label>\n'
        "  </fieldset>\n"
        '  <label><input id="subscribe" name="subscribe" type="checkbox" value="yes"> Subscribe to the newsletter</label>\n'
        '  <label for="message">Message</label>\n'
        '  <textarea id="message" name="message" rows="4" cols="50"></textarea>\n'
        '  <p><button id="send" type="submit">Send</button></p>\n'
        "</form>",
    )


def confirmation_page(name: str, ticket: int) -> str:
    return document(
        "Message sent",
        "<h1>Message sent</h1>\n"
        f'<div id="confirmation">Thanks, {_t(name)}! Ticket #{ticket}</div>\n'
        '<p><a id="back" href="/account">Back to your account</a></p>',
    )


# --- infinite scroll -----------------------------------------------------------------------------


def _scroll_item(n: int) -> str:
    return (
        f'<div class="item" data-index="{n}"><h3 class="title">Item {n}</h3>'
        f'<p class="body">Body of item {n}.</p></div>'
    )


def scroll_page() -> str:
    initial = "\n".join(_scroll_item(n) for n in range(1, SCROLL_BATCH + 1))
    script = f"""
<script>
(() => {{
  const BATCH = {SCROLL_BATCH}, TOTAL = {SCROLL_TOTAL}, DELAY = {SCROLL_LOAD_DELAY_MS};
  const list = document.getElementById("items");
  const loading = document.getElementById("loading");
  let busy = false;
  function count() {{ return list.querySelectorAll(".item").length; }}
  function nearBottom() {{
    const doc = document.documentElement;
    return window.innerHeight + window.scrollY >= doc.scrollHeight - 400;
  }}
  function load() {{
    if (busy || document.getElementById("end")) return;
    busy = true;
    loading.hidden = false;
    setTimeout(() => {{
      const start = count();
      for (let n = start + 1; n <= Math.min(start + BATCH, TOTAL); n++) {{
        const div = document.createElement("div");
        div.className = "item";
        div.dataset.index = String(n);
        div.innerHTML = '<h3 class="title">Item ' + n + '</h3><p class="body">Body of item ' + n + '.</p>';
        list.appendChild(div);
      }}
      if (count() >= TOTAL) {{
        const end = document.createElement("div");
        end.id = "end";
        end.textContent = "No more items";
        list.after(end);
      }}
      loading.hidden = true;
      busy = false;
      if (nearBottom()) load();  // a tall window shows the bottom without scrolling: keep filling
    }}, DELAY);
  }}
  window.addEventListener("scroll", () => {{ if (nearBottom()) load(); }}, {{ passive: true }});
  if (nearBottom()) load();
}})();
</script>
"""
    # #loading is position: fixed so showing it does not change the page height: a scroll step
    # that waits for the page to grow then sees the new items, not the indicator.
    head = (
        "<style>.item { min-height: 110px; border-bottom: 1px solid #ddd; }\n"
        "#loading { position: fixed; bottom: 0; left: 0; right: 0; margin: 0; padding: .5rem;"
        " background: #ffd; text-align: center; }</style>\n"
    )
    return document(
        "Infinite scroll",
        f'<h1>Infinite scroll</h1>\n<div id="items">\n{initial}\n</div>\n'
        f'<p id="loading" hidden>Loading…</p>\n{script}',
        head=head,
    )


# --- widgets playground --------------------------------------------------------------------------


def widgets_page(delayed_ms: int = DELAYED_BUTTON_MS) -> str:
    """Controls for the element actions: a late button, hover, keys, select, counter, frame, shadow DOM."""
    return document("Widgets", _WIDGETS_BODY + _widgets_script(delayed_ms))


#: The widgets page's markup; :func:`_widgets_script` makes it live.
_WIDGETS_BODY = (
    "<h1>Widgets</h1>\n"
    '<p>Status: <span id="status">ready</span></p>\n'
    '<section><h2>Delayed button</h2><div id="delayed-slot"></div></section>\n'
    "<section><h2>Hover</h2>\n"
    '  <span id="hover-target" style="padding:.5rem;border:1px dashed #888">Hover me</span>\n'
    '  <span id="hover-tip" hidden>Tooltip shown</span>\n'
    "</section>\n"
    "<section><h2>Keys</h2>\n"
    '  <input id="keys" type="text" placeholder="Type here">\n'
    '  <p>Key log: <span id="keylog"></span></p>\n'
    "</section>\n"
    "<section><h2>Select and checkbox</h2>\n"
    '  <label for="color">Color</label>\n'
    '  <select id="color" name="color">\n'
    '    <option value="red">Red</option>\n'
    '    <option value="green">Green</option>\n'
    '    <option value="blue">Blue</option>\n'
    "  </select>\n"
    '  <label><input id="agree" type="checkbox" name="agree"> I agree</label>\n'
    "</section>\n"
    "<section><h2>Counter</h2>\n"
    '  <button id="inc" type="button">Increment</button> <span id="counter">0</span>\n'
    "</section>\n"
    "<section><h2>Frame</h2>\n"
    '  <iframe id="frame" src="/frame" title="Embedded frame" width="400" height="120"></iframe>\n'
    "</section>\n"
    '<section><h2>Shadow DOM</h2><shadow-box id="shadow-host"></shadow-box></section>\n'
    '<p><a id="to-quotes" href="/quotes/">Go to the quotes</a></p>\n'
)


def _widgets_script(delayed_ms: int) -> str:
    """The widgets' behaviour; the delayed button appears after ``delayed_ms``."""
    return f"""
<script>
(() => {{
  const status = document.getElementById("status");
  const say = (text) => {{ status.textContent = text; }};

  setTimeout(() => {{
    const button = document.createElement("button");
    button.id = "delayed";
    button.type = "button";
    button.textContent = "I was late";
    button.addEventListener("click", () => say("delayed clicked"));
    document.getElementById("delayed-slot").appendChild(button);
  }}, {delayed_ms});

  const target = document.getElementById("hover-target");
  const tip = document.getElementById("hover-tip");
  target.addEventListener("mouseenter", () => {{ tip.hidden = false; say("hovered"); }});
  target.addEventListener("mouseleave", () => {{ tip.hidden = true; }});

  const keylog = document.getElementById("keylog");
  document.getElementById("keys").addEventListener("keydown", (event) => {{
    keylog.textContent = keylog.textContent ? keylog.textContent + " " + event.key : event.key;
  }});

  document.getElementById("color").addEventListener("change", (event) => {{
    say("color: " + event.target.value);
  }});
  document.getElementById("agree").addEventListener("change", (event) => {{
    say(event.target.checked ? "agreed" : "not agreed");
  }});

  const counter = document.getElementById("counter");
  document.getElementById("inc").addEventListener("click", () => {{
    counter.textContent = String(Number(counter.textContent) + 1);
  }});

  customElements.define("shadow-box", class extends HTMLElement {{
    constructor() {{
      super();
      const root = this.attachShadow({{ mode: "open" }});
      root.innerHTML = '<style>.shadow-text {{ font-style: italic; }}</style>' +
        '<span class="shadow-text">inside shadow</span> ' +
        '<button class="shadow-button" type="button">Shadow button</button>';
      root.querySelector(".shadow-button").addEventListener("click", () => say("shadow clicked"));
    }}
  }});
}})();
</script>
"""


def frame_page() -> str:
    return document(
        "Frame",
        '<p id="frame-text">Hello from the frame</p>\n'
        '<button id="in-frame" type="button">Frame button</button>\n'
        '<span id="frame-status">not clicked</span>\n'
        "<script>\n"
        'document.getElementById("in-frame").addEventListener("click", () => {\n'
        '  document.getElementById("frame-status").textContent = "clicked";\n'
        "});\n"
        "</script>",
        nav=False,
    )


# --- misc ----------------------------------------------------------------------------------------


def slow_page(ms: int) -> str:
    return document("Slow", f'<h1>Slow</h1>\n<p id="slow">Waited {ms} ms</p>')


def status_page(code: int, reason: str) -> str:
    return document(
        f"Status {code}",
        f'<h1 id="status-code">{code}</h1>\n<p id="reason">{_t(reason)}</p>',
    )


def flaky_page(key: str, attempt: int, failed: bool) -> str:
    word = "failed" if failed else "succeeded"
    return document(
        "Flaky",
        f'<h1>Flaky</h1>\n<p id="flaky" data-attempt="{attempt}">Attempt {attempt} for '
        f"{_t(key)} {word}</p>",
    )


def storage_page() -> str:
    return document(
        "Storage",
        "<h1>Storage</h1>\n"
        '<p id="storage">Use cookies, localStorage and IndexedDB on this origin.</p>',
    )


def console_error_page() -> str:
    return document(
        "Console error",
        '<h1>Console error</h1>\n<p id="console">This page logs an error and throws.</p>\n'
        "<script>\n"
        'console.error("boom from page");\n'
        'fetch("/status/500").catch(() => {});\n'
        'throw new Error("uncaught boom from page");\n'
        "</script>",
    )


def tickets_page(ref: str, count: int) -> str:
    """Whether contact-form posts mentioning ``ref`` arrived (how a side effect is verified)."""
    items = "".join(f'<li class="ticket">Ticket {i + 1} for {escape(ref)}</li>' for i in range(count))
    status = (
        f'<p id="ticket-found">{count} ticket(s) for {escape(ref)}</p>'
        if count
        else f'<p id="no-ticket">No ticket for {escape(ref)}</p>'
    )
    return document("Tickets", f'<h1>Tickets</h1>\n{status}\n<ul id="tickets">{items}</ul>')
