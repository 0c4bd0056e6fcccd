"""Encrypting secret run parameters at rest (Fernet: AES-128-CBC + HMAC-SHA256).

The producer encrypts a run's secret params into the run record, so neither the broker message,
Flower, nor the database ever holds them in clear; the worker decrypts them in memory only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from browserq.errors import ConfigError

KEY_HINT = "generate one with `browserq keygen` and set BROWSERQ_SECRET_KEY on producers and workers"


@dataclass(frozen=True)
class Secret:
    """A value that must never be written in clear: ``Secret("s3cret")``. ``repr``/``str`` show
    ``Secret('***')``; ``.value`` is the value. ``Session.save_template(params={"password":
    Secret(…)})`` declares ``password`` a ``secret`` param and writes only ``${password}``."""

    value: str = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value:  # type: ignore[redundant-expr]  # callers may pass anything
            raise TypeError("Secret(value): value must be a non-empty string")

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def generate_key() -> str:
    return Fernet.generate_key().decode()


class SecretBox:
    def __init__(self, key: str | None, *, ephemeral: bool = False) -> None:
        self._fernet: Fernet | None = None
        self.ephemeral = ephemeral
        if key:
            try:
                self._fernet = Fernet(key.encode())
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"BROWSERQ_SECRET_KEY is not a valid Fernet key ({exc}); {KEY_HINT}") from None

    @classmethod
    def for_this_process(cls) -> SecretBox:
        """A box whose key exists only in this process's memory: what it encrypts can be read
        back here (a run resuming in the same process) and nowhere else, ever."""
        return cls(generate_key(), ephemeral=True)

    @property
    def enabled(self) -> bool:
        return self._fernet is not None

    def _require(self, why: str) -> Fernet:
        if self._fernet is None:
            raise ConfigError(f"BROWSERQ_SECRET_KEY is not set, but {why}; {KEY_HINT}")
        return self._fernet

    def encrypt(self, values: dict[str, str], *, why: str = "this run has secret params") -> str:
        return self.encrypt_json(values, why=why)

    def decrypt(self, token: str, *, why: str = "this run has secret params") -> dict[str, str]:
        return self.decrypt_json(token, why=why)

    def encrypt_json(self, value: Any, *, why: str = "data must be stored encrypted") -> str:
        return self._require(why).encrypt(json.dumps(value).encode()).decode()

    def decrypt_json(self, token: str, *, why: str = "data is stored encrypted") -> Any:
        try:
            return json.loads(self._require(why).decrypt(token.encode()))
        except InvalidToken:
            raise ConfigError(
                "BROWSERQ_SECRET_KEY does not decrypt this run's secrets: producer and worker must "
                "share the same key"
            ) from None
