"""The run store: SQLAlchemy models, Alembic migrations, the ``Store`` API and artifact files."""

from browserq.store.artifacts import ArtifactDir, ArtifactPathDenied, StoredFile
from browserq.store.engine import create_store_engine, mask_url, normalize_url
from browserq.store.migrations import find_migrations_dir, head_revision
from browserq.store.models import (
    Artifact,
    ArtifactKind,
    Base,
    Run,
    RunStatus,
    StepAttempt,
    StepStatus,
    TemplateRecord,
)
from browserq.store.store import DuplicateRun, Store
from browserq.store.views import ArtifactView, RunView, StepView

__all__ = [
    "Artifact",
    "ArtifactDir",
    "ArtifactKind",
    "ArtifactPathDenied",
    "ArtifactView",
    "Base",
    "DuplicateRun",
    "Run",
    "RunStatus",
    "RunView",
    "StepAttempt",
    "StepStatus",
    "StepView",
    "Store",
    "StoredFile",
    "TemplateRecord",
    "create_store_engine",
    "find_migrations_dir",
    "head_revision",
    "mask_url",
    "normalize_url",
]
