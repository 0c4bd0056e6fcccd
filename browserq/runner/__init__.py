"""Running one attempt of a template: open → walk → finish, from named parts.

:class:`TemplateRunner` runs whole templates; :class:`StepAttempt` (``runner.attempt``) runs one
step on an open context and returns a :class:`StepResult`. The actions themselves are in
:mod:`browserq.actions`; everything the runner records goes through the run's journal
(:mod:`browserq.journal`).
"""

from browserq.run_events import StepEvent, StepListener
from browserq.runner.runner import TemplateRunner
from browserq.runner.state import RunOutcome, RunRequest, StepOutcome, StepResult

__all__ = ["RunOutcome", "RunRequest", "StepEvent", "StepListener", "StepOutcome", "StepResult", "TemplateRunner"]
