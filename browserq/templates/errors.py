"""The templates package's own error, drawn in the tree at the top of :mod:`browserq.errors`.

The other template errors (``TemplateNotFound``, ``TemplateInvalid``, ``TemplateChanged``) live
in :mod:`browserq.errors` itself, since the producer, the worker and the store raise them too.
"""

from __future__ import annotations

from browserq.errors import ConfigError, ErrorClass, TemplateError, TemplateNotFound


class TemplatesDirMissing(ConfigError, TemplateNotFound):
    """The configured templates directory does not exist (both a config and a lookup failure).

    ``PERMANENT``: no retry finds a directory that is not there; the operator fixes the setting.
    """

    policy = ErrorClass.PERMANENT


class TemplateTaken(TemplateError):
    """A ``name@version`` is already declared by a template file (or pinned by the runs that used
    it) with another body: a version names one body, so a new body needs a new version."""

    policy = ErrorClass.PERMANENT

    def __init__(self, ref: str, where: str) -> None:
        self.ref, self.where = ref, where
        super().__init__(f"template {ref} is taken: {where} holds another body under that name and "
                         "version; save under another version (or another name)")


__all__ = ["TemplateTaken", "TemplatesDirMissing"]
