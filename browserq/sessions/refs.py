"""A session's refs: :class:`RefBook` issues them and resolves them to exactly their node, or fails.

A browserq ref (``e4.17``: the 17th ref issued in epoch 4) names one node of one document. The
book keeps, for each ref of the current epoch, the page, the frame and that frame's navigation
count when it was issued, and Playwright's own ref for the node (``e12``, ``f1e3``). Playwright's
injected script binds its ref to the element object itself (a ref is handed out once per document
and world, from a counter that only grows) and its ``aria-ref=`` engine answers that element only
while it is connected: a node that left the DOM resolves to nothing, never to a look-alike.
Playwright's counter starts again at ``e1`` in every new document, which is why its refs are never
shown: the book's epoch (main-frame navigations of the session's page, and switches to another
page) and per-frame navigation counts decide first whether a ref still belongs to the document
on screen. A ref is never looked up again by role or name.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from playwright.async_api import Frame, Page

from browserq.errors import Codes, StepFailed

_REF = re.compile(r"^e(\d+)\.(\d+)$")
#: How long telling whether a ref went stale may take, after its action failed.
STALE_CHECK_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class IssuedRef:
    """What a ref was given to: which node of which document, as Playwright knows it."""

    ref: str
    epoch: int
    page: Page
    frame: Frame
    frame_generation: int  # the frame's navigations seen when the ref was issued
    target: str  # Playwright's ref of the node in that document (``e12``, ``f1e3``)
    role: str
    name: str

    @property
    def selector(self) -> str:
        """The Playwright selector bound to the node (``aria-ref=``): it matches that node or nothing."""
        return f"aria-ref={self.target}"

    def described(self) -> str:
        return f'{self.role} "{self.name}"' if self.name else self.role


@dataclass(frozen=True)
class Mark:
    """The book's state when a snapshot began: refs it issues belong to these documents."""

    epoch: int
    generations: dict[Frame, int]

    def generation(self, frame: Frame) -> int:
        return self.generations.get(frame, 0)


class RefBook:
    """Issues a session's refs and resolves them; counts the epoch.

    ``epoch`` starts where the session's last one ended (a resumed session passes it on), so a
    ref string is never issued twice in a session's life."""

    def __init__(self, epoch: int = 0) -> None:
        self.epoch = epoch
        self._page: Page | None = None
        self._watched: list[Page] = []
        self._generations: dict[Frame, int] = {}
        self._issued: dict[str, IssuedRef] = {}  # the current epoch's refs
        self._by_node: dict[tuple[Frame, int, str], str] = {}  # (frame, generation, target) → ref
        self._counts: dict[int, int] = {}  # epoch → refs issued in it (older epochs keep only this)

    # --- the epoch -----------------------------------------------------------------------
    def watch(self, page: Page) -> None:
        """``page`` is the session's page now; another page than before starts a new epoch."""
        if page is self._page:
            return
        if self._page is not None:
            self._advance()
        self._page = page
        if not any(seen is page for seen in self._watched):
            self._watched.append(page)
            page.on("framenavigated", lambda frame: self._navigated(page, frame))
            page.on("framedetached", self._detached)
            page.on("close", lambda _: self._watched.remove(page) if page in self._watched else None)

    def _navigated(self, page: Page, frame: Frame) -> None:
        self._generations[frame] = self._generations.get(frame, 0) + 1
        if frame.parent_frame is None and page is self._page:
            self._advance()

    def _detached(self, frame: Frame) -> None:
        self._generations.pop(frame, None)

    def _advance(self) -> None:
        """A new epoch: every ref issued so far is stale (only how many there were is kept)."""
        self.epoch += 1
        self._issued.clear()
        self._by_node.clear()

    # --- issuing (a snapshot) --------------------------------------------------------------
    def mark(self, page: Page) -> Mark:
        """Before a snapshot of ``page``: what its refs will be bound to."""
        self.watch(page)
        return Mark(self.epoch, dict(self._generations))

    def unchanged_since(self, mark: Mark, frames: list[Frame]) -> bool:
        """Whether nothing the snapshot read navigated while it was taken."""
        return mark.epoch == self.epoch and all(
            self._generations.get(frame, 0) == mark.generation(frame) for frame in frames
        )

    def issue(self, mark: Mark, frame: Frame, target: str, role: str, name: str) -> str:
        """The ref for the node Playwright calls ``target`` in ``frame``: the one already issued
        for it in this epoch, else a new one. A snapshot that raced a navigation gets refs that
        are stale from the start (bound to the document it began on)."""
        key = (frame, mark.generation(frame), target)
        if mark.epoch == self.epoch and key in self._by_node:
            return self._by_node[key]
        number = self._counts.get(mark.epoch, 0) + 1
        self._counts[mark.epoch] = number
        ref = f"e{mark.epoch}.{number}"
        if mark.epoch == self.epoch and self._page is not None:
            self._issued[ref] = IssuedRef(
                ref, mark.epoch, self._page, frame, mark.generation(frame), target, role, name
            )
            self._by_node[key] = ref
        return ref

    def retire(self, mark: Mark, frame: Frame, present: set[str]) -> None:
        """A snapshot of ``frame`` showed only the nodes ``present`` (Playwright's refs): refs of
        its other nodes can never resolve again (Playwright resolves against the last snapshot),
        so they are forgotten — a long session keeps records of live nodes only."""
        if mark.epoch != self.epoch:
            return
        generation = mark.generation(frame)
        gone = [ref for ref, issued in self._issued.items() if issued.frame is frame
                and issued.frame_generation == generation and issued.target not in present]
        for ref in gone:
            issued = self._issued.pop(ref)
            self._by_node.pop((frame, generation, issued.target), None)

    def issued(self, ref: str) -> IssuedRef | None:
        """What a ref of the current epoch was given to (None: unknown, or of an older epoch)."""
        return self._issued.get(ref)

    # --- resolving (a command) -------------------------------------------------------------
    async def target(self, page: Page, ref: str) -> str:
        """The Playwright selector bound to ``ref``'s node on ``page``; ``REF_UNKNOWN`` for a ref
        never issued, ``REF_STALE`` when its document or its node is gone."""
        issued = self._current(page, ref)
        why = self._moved(issued)
        # A page that does not answer (crashed, busy) raises here: the executor tells what it was.
        if why is None and await page.locator(issued.selector).count() != 1:
            why = "its node has left the page (removed or replaced) or a later snapshot no longer showed it"
        if why is not None:
            raise self._stale(ref, f"{issued.described()}: {why}")
        return issued.selector

    async def stale(self, page: Page, ref: str, timeout_s: float = STALE_CHECK_TIMEOUT_S) -> StepFailed | None:
        """``REF_STALE`` if ``ref`` surely no longer resolves (asked after an action failed);
        None when it still does, or the page did not say within ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s):
                await self.target(page, ref)
        except StepFailed as exc:
            return exc if exc.code is Codes.REF_STALE else None
        except Exception:  # no answer: the action's own failure stands
            return None
        return None

    def _current(self, page: Page, ref: str) -> IssuedRef:
        """The record of a ref of the current epoch, or the failure that says why there is none."""
        self.watch(page)
        match = _REF.match(ref.strip())
        epoch, number = (int(match.group(1)), int(match.group(2))) if match else (-1, 0)
        if match is None or not 1 <= number <= self._counts.get(epoch, 0):
            raise StepFailed(
                Codes.REF_UNKNOWN,
                f"ref {ref!r} was never issued by this session's snapshots; use a ref from the last "
                f"snapshot's [ref=…] (they look like e{self.epoch}.1)",
            )
        issued = self._issued.get(ref.strip())
        if epoch < self.epoch:
            raise self._stale(ref, f"it was issued in epoch {epoch}; the page navigated or another tab was chosen since")
        if issued is None:
            raise self._stale(ref, "a later snapshot no longer showed its node (removed, replaced, hidden or renamed)")
        return issued

    def _moved(self, issued: IssuedRef) -> str | None:
        """Why the ref's frame no longer shows the document it was issued in, or None."""
        frame = issued.frame
        if frame.is_detached():
            return "its frame was removed"
        if self._generations.get(frame, 0) != issued.frame_generation:
            return "its frame navigated since"
        return None

    def _stale(self, ref: str, why: str) -> StepFailed:
        return StepFailed(
            Codes.REF_STALE,
            f"ref {ref} is stale: {why}. The page is at epoch {self.epoch}: take a new snapshot and use its refs",
        )
