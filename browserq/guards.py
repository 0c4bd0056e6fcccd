"""Safety checks shared by the template loader (on literals) and the runner (after interpolation).

A template author, or whoever passes run parameters, must not be able to point the browser at
``file:``/``javascript:`` URLs, at hosts the template did not declare, or make a screenshot write
outside the run's artifact directory. The same functions guard both moments, so a value that
passes the static check and a value produced at run time are judged by one rule.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from browserq.errors import Codes, StepFailed

ALLOWED_SCHEMES = ("http", "https")

# The WHATWG URL parser (what Chromium uses) drops tabs and newlines anywhere in a URL and trims
# C0 controls and spaces at both ends; we do the same so that "java\tscript:" is seen as javascript.
_URL_INVISIBLE = re.compile(r"[\t\n\r]")
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_DRIVE = re.compile(r"^[A-Za-z]:")


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def normalize_host(host: str) -> str:
    """Lower-case, drop a trailing dot and IDNA-encode, so equal hosts compare equal."""
    host = host.strip().lower().rstrip(".")
    host = host.removeprefix("*.")
    host = host.lstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return host


def url_host_allowed(host: str, allowed_domains: Sequence[str]) -> bool:
    """True if ``host`` equals an allowed domain or is a subdomain of one (empty list: any host).

    ``a.quotes.example`` matches ``quotes.example``; ``evilquotes.example`` does not.
    """
    if not allowed_domains:
        return True
    host = normalize_host(host)
    if not host:
        return False
    for entry in allowed_domains:
        domain = normalize_host(entry)
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def url_scheme_and_host(url: str) -> tuple[str, str]:
    """The scheme and host a browser would see for ``url`` ('' when absent).

    Backslashes count as slashes (as in browsers for http/https), so ``http://evil\\@good``
    yields ``evil``, not ``good``.
    """
    cleaned = _URL_INVISIBLE.sub("", url).strip(_C0_AND_SPACE)
    parts = urlsplit(cleaned.replace("\\", "/"))
    return parts.scheme.lower(), (parts.hostname or "")


def check_url(url: str, allowed_domains: Sequence[str]) -> None:
    """Raise ``StepFailed`` unless ``url`` is http(s) and its host is allowed.

    ``URL_DENIED`` for another (or no) scheme or a missing host, ``DOMAIN_DENIED`` for a host
    outside a non-empty ``allowed_domains``. Ports and letter case do not matter.
    """
    if not isinstance(url, str):
        raise StepFailed(Codes.URL_DENIED, f"URL must be a string, got {type(url).__name__}")
    scheme, host = url_scheme_and_host(url)
    if not scheme:
        raise StepFailed(
            Codes.URL_DENIED,
            f"URL {_short(url)!r} has no scheme; only http and https URLs are allowed",
        )
    if scheme not in ALLOWED_SCHEMES:
        raise StepFailed(
            Codes.URL_DENIED,
            f"URL scheme '{scheme}:' is not allowed (only http and https are): {_short(url)!r}",
        )
    if not host:
        raise StepFailed(Codes.URL_DENIED, f"URL {_short(url)!r} has no host")
    if not url_host_allowed(host, allowed_domains):
        raise StepFailed(
            Codes.DOMAIN_DENIED,
            f"host '{host}' is not in allowed_domains ({', '.join(allowed_domains)})",
        )


def artifact_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a file name relative to an artifact directory, or None if it can.

    Purely lexical, so the loader can judge literal names without a directory at hand.
    """
    if not isinstance(name, str):
        return f"artifact name must be a string, got {type(name).__name__}"
    if not name.strip():
        return "artifact name is empty"
    if "\x00" in name:
        return "artifact name contains a NUL character"
    if "\\" in name:
        return f"artifact name {_short(name)!r} contains a backslash; use '/' between folders"
    if _DRIVE.match(name):
        return f"artifact name {_short(name)!r} starts with a drive letter; it must be relative"
    if name.startswith("/"):
        return (
            f"artifact name {_short(name)!r} is absolute; it must be relative to the run's folder"
        )
    folded = unicodedata.normalize("NFKC", name)  # fullwidth ．．／ is ../ to whoever normalises it
    if ".." in PurePosixPath(name).parts or ".." in PurePosixPath(folded.replace("\\", "/")).parts:
        return f"artifact name {_short(name)!r} contains '..'; it must stay inside the run's folder"
    if name.endswith("/") or PurePosixPath(name).name in ("", "."):
        return f"artifact name {_short(name)!r} does not name a file"
    longest = max(PurePosixPath(name).parts, key=lambda part: len(part.encode("utf-8")))
    if len(longest.encode("utf-8")) > MAX_NAME_PART_BYTES:
        return (
            f"artifact name {_short(name)!r} has a part of {len(longest.encode('utf-8'))} bytes; "
            f"the limit is {MAX_NAME_PART_BYTES} bytes of UTF-8 per folder or file name"
        )
    return None


def safe_artifact_path(base: Path, name: str) -> Path:
    """``base / name`` resolved, or ``StepFailed(PATH_DENIED)`` if it would land outside ``base``.

    Symlinks are resolved, so a link inside ``base`` pointing elsewhere is refused too.
    """
    problem = artifact_name_problem(name)
    if problem:
        raise StepFailed(Codes.PATH_DENIED, problem)
    root = Path(base).resolve()
    target = (root / name).resolve()
    if target == root or not target.is_relative_to(root):
        raise StepFailed(
            Codes.PATH_DENIED,
            f"artifact name {_short(name)!r} resolves outside the artifact folder",
        )
    return target


def check_selector_length(selector: str, max_length: int) -> None:
    """Raise ``StepFailed(INVALID_STEP_INPUT)`` for a selector longer than ``max_length``.

    For selectors built at run time from parameters; the loader checks literal ones.
    """
    if len(selector) > max_length:
        raise StepFailed(
            Codes.INVALID_STEP_INPUT,
            f"selector is {len(selector)} characters long; the limit is {max_length}",
        )


# --- files moved by download and upload steps -------------------------------------------------
#: Longest file name a download or a file param keeps, in characters and in UTF-8 bytes (the
#: extension survives the cut): file systems allow 255 bytes a name, and a store adds its own
#: temporary prefix and suffix.
MAX_FILENAME_LENGTH = 120
MAX_FILENAME_BYTES = 200
#: Longest path component an artifact name may have, in UTF-8 bytes (255 less the temporary name's additions).
MAX_NAME_PART_BYTES = 240
_UNSAFE_FILENAME_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _cut(text: str, max_bytes: int) -> str:
    """At most ``max_bytes`` of UTF-8, cut between characters, never inside one."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def _bounded(text: str) -> str:
    """``text`` within MAX_FILENAME_LENGTH characters and MAX_FILENAME_BYTES bytes, keeping a
    short extension."""
    if len(text) <= MAX_FILENAME_LENGTH and len(text.encode("utf-8")) <= MAX_FILENAME_BYTES:
        return text
    stem, dot, ext = text.rpartition(".")
    keep = "." + ext if dot and 0 < len(ext.encode("utf-8")) <= 16 and stem else ""
    stem = stem if keep else text
    stem = _cut(stem[: MAX_FILENAME_LENGTH - len(keep)], MAX_FILENAME_BYTES - len(keep.encode("utf-8")))
    return stem.rstrip(". ") + keep if stem.rstrip(". ") else ""


def safe_filename(name: str | None, fallback: str = "download") -> str:
    """A file name a page or a producer suggested, made safe to keep as one path component.

    NFKC-normalised first (fullwidth ``．．／`` is ``../``); only the last path part survives
    (``../../x`` and ``C:\\x`` become ``x``); control, format and bidi-override characters go;
    leading dots and spaces go (no hidden files, no ``..``); at most
    :data:`MAX_FILENAME_LENGTH` characters and :data:`MAX_FILENAME_BYTES` bytes of UTF-8,
    keeping the extension; ``fallback`` if nothing is left.
    """
    text = str(name or "").encode("utf-8", "ignore").decode("utf-8")  # no lone surrogates
    text = unicodedata.normalize("NFKC", text)
    text = _UNSAFE_FILENAME_CHARS.sub("", text).replace("\\", "/")
    text = re.sub(r"\s+", " ", text.rsplit("/", 1)[-1]).strip().lstrip(". ").rstrip(". ")
    return _bounded(text) or fallback


def upload_path_problem(path: object) -> str | None:
    """Why ``path`` cannot name a file inside ``BROWSERQ_UPLOADS_DIR``, or None if it can.

    Purely lexical (the loader judges literal paths with it); :func:`safe_upload_path` also
    resolves symlinks on the worker."""
    if not isinstance(path, str) or not path.strip():
        return "upload path is empty"
    if "\x00" in path:
        return "upload path contains a NUL character"
    if "\\" in path:
        return f"upload path {_short(path)!r} contains a backslash; use '/' between folders"
    if path.startswith("/") or _DRIVE.match(path):
        return f"upload path {_short(path)!r} is absolute; it must be relative to BROWSERQ_UPLOADS_DIR"
    if ".." in PurePosixPath(path).parts:
        return f"upload path {_short(path)!r} contains '..'; it must stay inside BROWSERQ_UPLOADS_DIR"
    if path.endswith("/") or PurePosixPath(path).name in ("", "."):
        return f"upload path {_short(path)!r} does not name a file"
    return None


def safe_upload_path(base: Path | None, path: str) -> Path:
    """The file ``path`` names inside the uploads directory ``base``, resolved.

    ``StepFailed(PATH_DENIED)`` without an uploads directory, for a lexically bad path, or one
    that resolves outside ``base`` (a symlink out of it); ``UPLOAD_FILE_MISSING`` if it is not a
    regular file."""
    if base is None:
        raise StepFailed(Codes.PATH_DENIED, f"upload path {_short(path)!r}: no uploads directory; set BROWSERQ_UPLOADS_DIR")
    problem = upload_path_problem(path)
    if problem:
        raise StepFailed(Codes.PATH_DENIED, problem)
    root = Path(base).resolve()
    target = (root / path).resolve()
    if target == root or not target.is_relative_to(root):
        raise StepFailed(Codes.PATH_DENIED, f"upload path {_short(path)!r} resolves outside BROWSERQ_UPLOADS_DIR")
    if not target.is_file():
        raise StepFailed(Codes.UPLOAD_FILE_MISSING, f"upload path {_short(path)!r} is not a file in {root}")
    return target


def foreign_url_regex(allowed_domains: Sequence[str]) -> re.Pattern[str]:
    """A regex matching http(s)/ws(s) URLs whose host is *not* an allowed domain or a subdomain.

    Valid in Python and JavaScript alike (Playwright's driver compiles it with ``new RegExp``).
    It only decides what reaches Python; the handler judges with ``url_host_allowed`` again, so a
    regex that matched too much would cost time, never let a foreign host through.
    """
    hosts = sorted({normalize_host(d) for d in allowed_domains if normalize_host(d)})
    alternatives = "|".join(_escape(h) for h in hosts)
    # scheme, optional userinfo, then: not (any subdomains + an allowed host, then port/end).
    return re.compile(
        r"^(?:https?|wss?)://(?:[^/?#@]*@)?"
        rf"(?!(?:[^/?#:@]*\.)?(?:{alternatives})\.?(?::\d+)?(?:[/?#]|$))",
        re.IGNORECASE,
    )


def _escape(host: str) -> str:
    return "".join("\\" + c if c in r"\^$.|?*+()[]{}/" else c for c in host)
