"""The run store: SQLAlchemy models, Alembic migrations, the ``Store`` that holds one repository
per concern (``store.runs``, ``store.transitions``, ``store.leases``, ``store.steps``, … ; see
:mod:`browserq.store.store`), its errors (:mod:`browserq.store.errors`) and artifact files."""

# The human-loop tables join the schema's metadata (migration 0007) whenever the store loads.
from browserq.store import human_models as _human_models  # noqa: F401
from browserq.store.artifacts import ArtifactDir, StoredFile, artifact_store
from browserq.store.engine import create_store_engine, mask_url, normalize_url
from browserq.store.errors import (
    ArtifactPathDenied,
    DuplicateRun,
    IdentityBusy,
    IdentityDisabled,
    IdentityError,
    IdentityLeaseLost,
    IdentityNotFound,
    IllegalTransition,
    LeaseBusy,
    LeaseLost,
    NotInReview,
    RunAlreadyFinished,
    StoreUnavailable,
)
from browserq.store.migrations import find_migrations_dir, head_revision
from browserq.store.models import (
    Artifact,
    ArtifactKind,
    Base,
    Batch,
    Identity,
    Run,
    RunStatus,
    RunTransition,
    StepAttemptRecord,
    StepStatus,
    TemplateRecord,
)
from browserq.store.states import LEGAL
from browserq.store.store import Store
from browserq.store.transitions import check_transition
from browserq.store.views import (
    ArtifactView,
    BatchView,
    IdentityLease,
    IdentityView,
    Lease,
    RunView,
    StepView,
    TransitionView,
)

#: Names this package exported under another name before: the old spelling says where it went.
_RENAMED = {
    "StepAttempt": "browserq.store.StepAttempt is now StepAttemptRecord (the row of one step attempt; "
    "browserq.runner.StepAttempt is the executor that runs one step)",
}


def __getattr__(name: str) -> object:
    if name in _RENAMED:
        raise AttributeError(_RENAMED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LEGAL",
    "Artifact",
    "ArtifactDir",
    "ArtifactKind",
    "ArtifactPathDenied",
    "ArtifactView",
    "Base",
    "Batch",
    "BatchView",
    "DuplicateRun",
    "Identity",
    "IdentityBusy",
    "IdentityDisabled",
    "IdentityError",
    "IdentityLease",
    "IdentityLeaseLost",
    "IdentityNotFound",
    "IdentityView",
    "IllegalTransition",
    "Lease",
    "LeaseBusy",
    "LeaseLost",
    "NotInReview",
    "Run",
    "RunAlreadyFinished",
    "RunStatus",
    "RunTransition",
    "RunView",
    "StepAttemptRecord",
    "StepStatus",
    "StepView",
    "Store",
    "StoreUnavailable",
    "StoredFile",
    "TemplateRecord",
    "TransitionView",
    "artifact_store",
    "check_transition",
    "create_store_engine",
    "find_migrations_dir",
    "head_revision",
    "mask_url",
    "normalize_url",
]
