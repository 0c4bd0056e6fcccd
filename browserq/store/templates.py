"""Template versions as runs used them: the exact body, and the pin of ``name@version`` to one
canonical hash (a version is immutable once a run used it)."""

from __future__ import annotations

import re

from sqlalchemy import exc, select
from sqlalchemy.orm import Session

from browserq.errors import StoreError, TemplateChanged
from browserq.store.models import TemplateRecord, TemplateVersion
from browserq.store.plumbing import Database

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class Templates:
    """Template bodies and ``name@version`` pins (``store.templates``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def save_template(
        self,
        *,
        name: str,
        version: str,
        content_hash: str,
        body: str,
        source: str,
        canonical_hash: str | None = None,
    ) -> int:
        """Record a template version (idempotent); return its id. Safe under concurrent callers.

        With ``canonical_hash`` the ``name@version`` is pinned to it on first use, and a body
        with another canonical hash raises :class:`TemplateChanged` (nothing is written).
        """
        for what, digest in (("content_hash", content_hash), ("canonical_hash", canonical_hash)):
            if digest is not None and not _SHA256.match(digest):
                raise ValueError(f"{what} must be a lowercase sha256 hex digest, got {digest!r}")
        key = (
            TemplateRecord.name == name,
            TemplateRecord.version == version,
            TemplateRecord.content_hash == content_hash,
        )

        def save(s: Session, _retried: bool) -> int:
            pin = s.get(TemplateVersion, (name, version)) if canonical_hash else None
            if pin is not None and pin.content_hash != canonical_hash:
                raise TemplateChanged(
                    f"{name}@{version}", source, canonical_hash or "", pin.content_hash
                )
            found = s.scalar(select(TemplateRecord.id).where(*key))
            if found is None:
                record = TemplateRecord(
                    name=name, version=version, content_hash=content_hash, body=body, source=source
                )
                s.add(record)
                s.flush()
                found = record.id
            if canonical_hash and pin is None:
                s.add(
                    TemplateVersion(
                        name=name, version=version, content_hash=canonical_hash, template_id=found
                    )
                )
                s.flush()
            return found

        action = f"saving template {name}@{version}"
        try:
            return self.db.tx(action, save, write=True, passthrough=(exc.IntegrityError,))
        except exc.IntegrityError:
            # Another caller inserted the same version (or pinned it) between our select and insert.
            return self.db.tx(action, save, write=True)

    def template_pin(self, name: str, version: str) -> str | None:
        """The content hash ``name@version`` is pinned to (None: no run used it yet)."""

        def read(s: Session) -> str | None:
            pin = s.get(TemplateVersion, (name, version))
            return pin.content_hash if pin is not None else None

        return self.db.read(f"reading the pin of template {name}@{version}", read)

    def get_template_body(self, template_id: int) -> TemplateRecord:
        """The detached template row (``.body`` is the exact YAML a run used)."""

        def read(s: Session) -> TemplateRecord:
            record = s.get(TemplateRecord, template_id)
            if record is None:
                raise StoreError(f"no template with id {template_id}")
            s.expunge(record)
            return record

        return self.db.read(f"reading template {template_id}", read)


__all__ = ["Templates"]
