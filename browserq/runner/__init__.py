"""Running one attempt of a template: the step loop, retries in place, recovery and evidence.

The actions themselves are in :mod:`browserq.actions`; everything the runner records goes
through the run's journal (:mod:`browserq.journal`).
"""

from browserq.runner.runner import TemplateRunner
from browserq.runner.state import RunOutcome, RunRequest, StepEvent, StepListener

__all__ = ["RunOutcome", "RunRequest", "StepEvent", "StepListener", "TemplateRunner"]
