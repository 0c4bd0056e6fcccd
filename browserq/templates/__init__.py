"""Templates: versioned YAML files of browser steps plus parameters.

``load_template_text``/``load_template_file`` parse and check one template (every problem at once,
with YAML lines); ``TemplateRegistry`` finds templates by ``name[@version]``; ``validate_params``
turns run parameters into typed values; ``render`` fills ``${...}`` references at run time.

The schema is :mod:`~browserq.templates.model` (the template), :mod:`~browserq.templates.steps`,
:mod:`~browserq.templates.settings_model` and :mod:`~browserq.templates.fields`. Modules inside
this package import from the module that defines a name, never from this ``__init__``; build a
registry with :meth:`TemplateRegistry.from_settings`, which applies every settings-derived limit.
"""

from browserq.templates.blocks import BlockStep, children
from browserq.templates.conditions import WhenSpec
from browserq.templates.errors import TemplatesDirMissing
from browserq.templates.fields import version_tuple
from browserq.templates.interpolate import (
    NOT_INTERPOLATED,
    MalformedReference,
    format_value,
    has_references,
    lookup,
    make_scope,
    references,
    render,
    render_step,
    rendered_number,
)
from browserq.templates.loader import (
    LoadedTemplate,
    content_hash,
    load_template_file,
    load_template_text,
)
from browserq.templates.locators import ARIA_ROLES, LocatorSpec, selector_length, selector_text
from browserq.templates.model import ParamSpec, SessionSpec, Template
from browserq.templates.params import PARAM_TYPES, coerce_value, secret_names, validate_params
from browserq.templates.registry import TemplateRegistry, parse_ref
from browserq.templates.settings_model import TemplateSettings
from browserq.templates.step_base import DialogAnswer
from browserq.templates.steps import (
    ACTION_CLASSES,
    ACTIONS,
    ActionStep,
    AssertStep,
    CheckStep,
    ClickStep,
    EvalStep,
    ExtractStep,
    FieldSpec,
    FillStep,
    GetStep,
    GoBackStep,
    HoverStep,
    NavigateStep,
    Postcondition,
    PressStep,
    RepeatSpec,
    RepeatStep,
    ScreenshotStep,
    ScrollStep,
    SelectStep,
    Step,
    TypeStep,
    UncheckStep,
    WaitStep,
    iter_steps,
)
from browserq.templates.tab_steps import CloseTabStep, SwitchTabStep

__all__ = [
    "ACTIONS",
    "ACTION_CLASSES",
    "ARIA_ROLES",
    "NOT_INTERPOLATED",
    "PARAM_TYPES",
    "ActionStep",
    "AssertStep",
    "BlockStep",
    "CheckStep",
    "ClickStep",
    "CloseTabStep",
    "DialogAnswer",
    "EvalStep",
    "ExtractStep",
    "FieldSpec",
    "FillStep",
    "GetStep",
    "GoBackStep",
    "HoverStep",
    "LoadedTemplate",
    "LocatorSpec",
    "MalformedReference",
    "NavigateStep",
    "ParamSpec",
    "Postcondition",
    "PressStep",
    "RepeatSpec",
    "RepeatStep",
    "ScreenshotStep",
    "ScrollStep",
    "SelectStep",
    "SessionSpec",
    "Step",
    "SwitchTabStep",
    "Template",
    "TemplateRegistry",
    "TemplateSettings",
    "TemplatesDirMissing",
    "TypeStep",
    "UncheckStep",
    "WaitStep",
    "WhenSpec",
    "children",
    "coerce_value",
    "content_hash",
    "format_value",
    "has_references",
    "iter_steps",
    "load_template_file",
    "load_template_text",
    "lookup",
    "make_scope",
    "parse_ref",
    "references",
    "render",
    "render_step",
    "rendered_number",
    "secret_names",
    "selector_length",
    "selector_text",
    "validate_params",
    "version_tuple",
]
