"""Running a template: the step loop, the actions, and the evidence kept when a run fails."""

from browserq.runner.runner import RunOutcome, RunRequest, StepEvent, StepListener, TemplateRunner

__all__ = ["RunOutcome", "RunRequest", "StepEvent", "StepListener", "TemplateRunner"]
