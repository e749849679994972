"""The client's side: HTTP to a sync server, its clock, and one `lore sync` run (push every
pending stream, then pull)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.core.sync.records import (
    BATCH_SIZE,
    PROTOCOL,
    PULL_CHECK_KEY,
    PULL_KEY,
    PULL_LIMIT,
    SERVER_KEY,
    STREAMS,
    Batch,
    SyncReport,
)
from lore.errors import BackendUnavailable, ConfigError
from lore.extras import package_command

if TYPE_CHECKING:
    import httpx

    from lore.core.sync.device import Sync

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class BatchTooLarge(BackendUnavailable):
    """The server refused a batch for its size (413): send it in smaller parts."""


# ---- the client: HTTP to a server --------------------------------------------------------
class Client:
    """The sync API of one server (``/api/v1/sync``), with errors as one line each."""

    def __init__(self, server: str, token: str | None, timeout: float = 30.0,
                 transport: Any = None) -> None:
        import httpx

        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=f"{self.server}/api/v1/sync", headers=headers,
                                 timeout=timeout, transport=transport)
        self.skew: float | None = None  # this clock minus the server's, from its Date header

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        import httpx

        try:
            sent = datetime.now(UTC)
            response = self.http.request(method, path, **kwargs)
            self.skew = clock_skew(response.headers.get("date"), sent, datetime.now(UTC))
        except httpx.TimeoutException:
            raise BackendUnavailable(f"the sync server {self.server} did not answer in time; "
                                     "run `lore sync` again (it resumes where it stopped)") from None
        except httpx.TransportError as exc:
            what = "cannot reach" if isinstance(exc, httpx.ConnectError) else "lost the connection to"
            raise BackendUnavailable(f"{what} the sync server {self.server} ({exc or type(exc).__name__}); "
                                     "is `lore serve` running there? run `lore sync` again to "
                                     "resume: nothing is stored twice") from None
        return self.answer(response)

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        message = ((data or {}).get("error") or {}).get("message") if isinstance(data, dict) else None
        if response.status_code == 401:
            raise ConfigError(f"the sync server {self.server} refused the token (401): "
                              f"{message or 'no valid token'}; set LORE_SYNC_TOKEN, --token or "
                              "sync.token_file")
        code = ((data or {}).get("error") or {}).get("code") if isinstance(data, dict) else None
        if response.status_code == 403 and code == "denied":
            raise ConfigError(f"the sync server {self.server} refused (403): {message}")
        if response.status_code == 409 and code == "protocol":
            raise ConfigError(f"the sync server {self.server} refused the batch: {message}")
        if response.status_code == 403:
            raise ConfigError(f"the sync server {self.server} refused (403): {message or ''}; "
                              "pushing needs a write token (lore serve token create --scope write)")
        if response.status_code == 404:
            raise ConfigError(f"{self.server} has no sync API (404); is it a Lore server of this "
                              "version? (`lore serve` there, after an upgrade)")
        if response.status_code == 413:
            raise BatchTooLarge(f"the sync server {self.server} refused a batch as too large: "
                                f"{message or ''}")
        if response.status_code >= 400 or not isinstance(data, dict):
            raise BackendUnavailable(f"the sync server {self.server} answered "
                                     f"{response.status_code}: {message or response.text[:200]}")
        return data

    def info(self) -> dict[str, Any]:
        info = self.call("GET", "/info")
        theirs = info.get("protocol")
        if theirs != PROTOCOL:
            older = ("upgrade Lore on the server" if isinstance(theirs, int) and theirs < PROTOCOL
                     else f"upgrade Lore here ({package_command('upgrade')})")
            raise ConfigError(f"the sync server {self.server} speaks sync protocol {theirs} "
                              f"(Lore {info.get('version')}); this Lore speaks {PROTOCOL}: "
                              f"{older}")
        return info

    def state(self, device: str) -> dict[str, Any]:
        """The server's view of ``device`` (:meth:`Sync.view`)."""
        return self.call("GET", "/state", params={"device": device})

    def push(self, device: str, batch: Batch) -> dict[str, Any]:
        return self.call("POST", "/push", json={
            "protocol": PROTOCOL, "device": device, "batch_id": batch.batch_id,
            "stream": batch.stream, "after": batch.after, "end": batch.end,
            "records": batch.records})

    def pull(self, device: str, cursor: int, check: str | None = None,
             limit: int = PULL_LIMIT) -> dict[str, Any]:
        params: dict[str, Any] = {"device": device, "cursor": cursor, "limit": limit}
        if check:
            params["check"] = check
        return self.call("GET", "/pull", params=params)


def clock_skew(date: str | None, sent: datetime, received: datetime) -> float | None:
    """This clock minus the server's, in seconds, from the ``Date`` header of an answer
    between ``sent`` and ``received`` (None: no usable header). Zero while the server's time
    lies within the round trip, give or take the header's one-second resolution, and up to
    five seconds before it: servers cache the header and renew it once a second (Uvicorn
    does), later when the machine is busy (2.007 s was seen at load 12). A clock problem
    worth telling is minutes, not seconds: the dates themselves are clamped at five minutes."""
    from email.utils import parsedate_to_datetime

    try:
        theirs = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError, IndexError):
        return None
    if theirs is None or theirs.tzinfo is None:
        return None
    if theirs < sent - timedelta(seconds=5):
        return (sent - theirs).total_seconds()
    if theirs > received + timedelta(seconds=1):
        return -(theirs - received).total_seconds()
    return 0.0


def run(sync: Sync, client: Client, *, batch_size: int = BATCH_SIZE, push: bool = True,
        pull: bool = True, progress: Progress | None = None) -> SyncReport:
    """Push every pending stream, then pull until the server has nothing newer."""
    device = sync.device_id()
    client.info()
    with sync.store.atomic():
        sync.store.set_meta(SERVER_KEY, client.server)
    report = SyncReport(client.server, device)
    if push:
        report.resent, report.behind = sync.align(client.state(device).get("acked") or {})
        total = sum(sync.pending(s) for s in STREAMS)
        done = 0
        for stream in STREAMS:
            size = batch_size
            while (batch := sync.next_batch(stream, size)) is not None:
                try:
                    ack = client.push(device, batch)
                except BatchTooLarge:
                    if size == 1:
                        first = batch.records[-1]
                        raise BatchTooLarge(
                            f"{first['kind']} {first['id']} alone is larger than the sync server "
                            f"{client.server} accepts; nothing after it in the {stream} stream "
                            "can be pushed until it is deleted here") from None
                    size = max(1, size // 2)  # the same rows again, in smaller batches
                    continue
                if ack.get("batch_id") != batch.batch_id:
                    raise BackendUnavailable(f"the sync server {client.server} acknowledged "
                                             "another batch; run `lore sync` again")
                sync.acknowledged(batch)
                report.batches += 1
                report.stored += int(ack.get("stored", 0))
                report.refused += int(ack.get("refused", 0))
                report.skipped.extend(batch.skipped)
                report.clamped += int(ack.get("clamped") or 0)
                report.ahead = max(report.ahead, float(ack.get("ahead") or 0.0))
                report.pushed[stream] = report.pushed.get(stream, 0) + batch.count
                done += batch.count
                if progress:
                    progress("push", done, max(total, done))
    if pull:
        cursor = int(sync.store.meta(PULL_KEY) or 0)
        check = sync.store.meta(PULL_CHECK_KEY) if cursor else None
        while True:
            page = client.pull(device, cursor, check)
            if page.get("rewound"):
                report.resent["pull"] = (cursor, 0)
            records = page.get("records") or []
            cursor = int(page.get("cursor", cursor))
            check = page.get("check") if isinstance(page.get("check"), str) else check
            merged = sync.apply_pulled(records, cursor, check)
            report.pulled += len(records)
            for name in ("added", "updated", "unchanged", "conflicts", "deleted", "refused"):
                setattr(report.merge, name, getattr(report.merge, name) + getattr(merged, name))
            if progress and records:
                progress("pull", report.pulled, report.pulled)
            if not page.get("more"):
                break
    report.skew = client.skew
    sync.note_clock(report)
    return report


def read_token_file(path: Path) -> str:
    """The token in a file only its owner may read (mode 0600); refused otherwise."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigError(f"sync token file {path} does not exist; write the token there "
                          f"(umask 077; echo TOKEN > {path}) or set LORE_SYNC_TOKEN") from None
    if os.name == "posix" and mode & 0o077:
        raise ConfigError(f"sync token file {path} may be read by others (mode "
                          f"{stat.S_IMODE(mode):04o}); chmod 600 {path}")
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError(f"sync token file {path} is empty; write the token there")
    return token
