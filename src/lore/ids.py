"""ULIDs and timestamps: sortable, mergeable across machines."""

from __future__ import annotations

from datetime import UTC, datetime

# The ulid package is imported on first use (it reads its installed version on import): a
# command that only reads makes no id.


# ULIDs are Crockford base32 (no I, L, O, U); a person may type a unique start of one.
CROCKFORD = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
ID_PREFIX = 6


def new_id() -> str:
    from ulid import ULID

    return str(ULID())


def is_id(value: str) -> bool:
    from ulid import ULID

    try:
        ULID.from_str(value)
    except (ValueError, TypeError):
        return False
    return True


def now() -> str:
    """UTC, ISO 8601 with milliseconds and a Z: sorts as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
