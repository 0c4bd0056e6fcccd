"""Session-side parts of agent sessions: accessibility snapshots and the refs they issue.

A session is a live context that a program or an AI agent drives one command at a time.
:class:`Snapshotter` gives the page's accessibility tree as text with a ref on each node to act on;
:class:`RefBook` makes sure a ref resolves only to the node it was given to, or fails
``REF_STALE`` / ``REF_UNKNOWN``; :func:`command_step` makes a command a step, so it runs through
the same executor as a template's steps (``docs/sessions.md``).

The runtime that holds sessions on the fleet (``docs/sessions.md``): :mod:`.host` (the
sessions a worker process holds), :mod:`.held` (a command run as a step), :mod:`.routing` (the
broker's queues), :mod:`.template` (the session's synthetic template), :mod:`.errors`.
"""

from browserq.sessions.commands import command_step
from browserq.sessions.refs import IssuedRef, RefBook
from browserq.sessions.snapshot import DEFAULT_BUDGET, Snapshot, Snapshotter

__all__ = ["DEFAULT_BUDGET", "IssuedRef", "RefBook", "Snapshot", "Snapshotter", "command_step"]
