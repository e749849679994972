"""The one error hierarchy. Every message says what to do next.

Interfaces translate these once: the CLI prints one line and exits 1, the MCP
server returns a tool error, the web app one JSON error shape.
"""

from __future__ import annotations


class LoreError(Exception):
    """Base of every error Lore raises on purpose."""


class NotFound(LoreError):
    """An id that names nothing."""


class InvalidInput(LoreError):
    """A value that breaks a rule of the data model (empty title, unknown confidence …)."""


class ConfigError(LoreError):
    """An unreadable or invalid config file or environment variable."""


class BackendUnavailable(LoreError):
    """An optional backend, extension or model that cannot be loaded here."""


class MigrationError(LoreError):
    """A database this version of Lore cannot open or upgrade."""


class NotALoreDatabase(MigrationError):
    """A file that is not a Lore database (or not SQLite at all)."""


class EmbeddingMismatch(LoreError):
    """The configured embedding model differs from the one the database was built with."""


class StoreBusy(LoreError):
    """The database stayed locked by another writer past the retry budget."""


class DetectorError(BackendUnavailable):
    """The correction detector's weights file does not match the detector's features."""


class AlreadyRunning(LoreError):
    """Another worker holds this home's lock."""


class ProviderError(LoreError):
    """A language-model provider that failed, refused or could not be reached."""

    attempts: int = 1  # how many tries were made before giving up (for the call log)


class UnusableReply(ProviderError):
    """A model reply that stayed unparseable or invalid after the retries that showed the error."""


class BudgetExceeded(LoreError):
    """Today's language-model token or cost budget would be exceeded by the call."""
