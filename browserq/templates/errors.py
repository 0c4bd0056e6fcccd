"""The templates package's own error, drawn in the tree at the top of :mod:`browserq.errors`.

The other template errors (``TemplateNotFound``, ``TemplateInvalid``, ``TemplateChanged``) live
in :mod:`browserq.errors` itself, since the producer, the worker and the store raise them too.
"""

from __future__ import annotations

from browserq.errors import ConfigError, ErrorClass, TemplateNotFound


class TemplatesDirMissing(ConfigError, TemplateNotFound):
    """The configured templates directory does not exist (both a config and a lookup failure).

    ``PERMANENT``: no retry finds a directory that is not there; the operator fixes the setting.
    """

    policy = ErrorClass.PERMANENT


__all__ = ["TemplatesDirMissing"]
