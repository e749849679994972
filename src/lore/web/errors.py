"""One error shape for the API, ``{"error": {"code", "message"}}``, and Lore's typed errors
translated once into a status code that means something."""

from __future__ import annotations

from typing import Any

from lore.errors import (
    BackendUnavailable,
    EmbeddingMismatch,
    Forbidden,
    InvalidInput,
    LoreError,
    NotFound,
    StorageError,
    StoreBusy,
    TooLarge,
)

# Most specific first: the first class an error is an instance of decides.
STATUS: list[tuple[type[LoreError], int, str]] = [
    (NotFound, 404, "not_found"),
    (TooLarge, 413, "too_large"),
    (InvalidInput, 422, "invalid_input"),
    (Forbidden, 403, "denied"),
    (EmbeddingMismatch, 409, "embedding_mismatch"),
    (StoreBusy, 503, "busy"),
    (StorageError, 503, "storage"),
    (BackendUnavailable, 503, "backend_unavailable"),
]

HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 409: "conflict", 413: "too_large", 422: "invalid_input",
              503: "unavailable"}


class HTTPProblem(Exception):
    """An error the web face raises itself (authentication, CSRF, a bad host)."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or HTTP_CODES.get(status, "error")
        self.message = message


def translate(exc: LoreError) -> tuple[int, str]:
    """(status, code) for a Lore error; any other LoreError is the client's bad request."""
    for cls, status, code in STATUS:
        if isinstance(exc, cls):
            return status, code
    return 400, "bad_request"


def body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": one_line(message)}}


def one_line(message: str) -> str:
    """An error is one line, even when it quotes a value that held line breaks."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def validation_message(errors: list[Any]) -> tuple[int, str, str]:
    """A request FastAPI could not validate: malformed JSON is 400, wrong fields are 422."""
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return 400, "bad_request", "the request body is not valid JSON"
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
    msg = str(first.get("msg", "invalid request"))
    text = f"{where}: {msg}" if where else msg
    if first.get("type") in ("string_too_long", "too_long"):
        return 413, "too_large", f"{text}; send less"
    return 422, "invalid_input", text
