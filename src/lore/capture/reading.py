"""Reading transcripts beside the writer: a file's items parsed and redacted, in parts.

The import writes parts (up to ``COMMIT_EVERY`` items, each with its redacted texts, and the
offset after the last of them) one transaction each, so an import stopped at any point resumes
exactly after what was written. The parts come from a second thread for a small import, and
from a process of its own for a large one: reading and redaction are Python, and a thread
shares the interpreter lock with the writer's Python (it gained 5–7 %), a process runs on the
second core. The process is ``python -m lore.capture.reading``, not a ``multiprocessing``
spawn, which would import the calling program's main module again (a script that uses Lore as
a library without a main guard would start itself over).
"""

from __future__ import annotations

import json
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lore import normalize
from lore.redact import redact, redact_value
from lore.store.rows import NewEdit

if TYPE_CHECKING:
    from lore.capture.transcripts import FileEdit, Turn


@dataclass(slots=True)
class Part:
    """Up to ``every`` items of one file as the reader prepared them, and where the read stood
    after the last of them."""

    items: list[tuple[Any, Any]]  # (Turn, (text, tool calls JSON)) or (FileEdit, row)
    end_offset: int
    malformed: int  # lines skipped since the previous part
    unknown: int
    last: bool = False
    error: BaseException | None = None


def prepare(item: Turn | FileEdit) -> Any:
    """The door for transcripts: messages, tool calls, titles, chunks and edits hold no secret."""
    from lore.capture.transcripts import FileEdit

    if isinstance(item, FileEdit):
        return edit_row(item)
    return redact(item.text), tool_calls_json(item.tool_calls)


def _redacted(item: Turn | FileEdit) -> tuple[Any, Any]:
    """(item, prepared), the item without the raw texts its prepared form replaces: they would
    only cross the pipe twice, unredacted beside redacted."""
    from dataclasses import replace

    from lore.capture.transcripts import FileEdit

    prepared = prepare(item)
    if isinstance(item, FileEdit):
        return replace(item, old_text=None, new_text=None), prepared
    return replace(item, text="", tool_calls=()), prepared


def parts_of(path: Path, offset: int, every: int) -> Iterator[Part]:
    """The parts of one file from ``offset``; the last one says so (possibly empty)."""
    from lore.capture.readers import reader_for
    from lore.capture.transcripts import ParseStats

    reader = reader_for(path)
    stats = ParseStats()
    stats.end_offset = offset
    items: list[tuple[Any, Any]] = []
    malformed = unknown = 0

    def part(last: bool = False) -> Part:
        nonlocal malformed, unknown
        seen = sum(stats.unknown_types.values())
        out = Part(items, stats.end_offset, stats.malformed - malformed, seen - unknown, last)
        malformed, unknown = stats.malformed, seen
        return out

    if reader is not None:
        for item in reader.read(path, offset, stats):
            items.append(_redacted(item))
            if len(items) >= every:
                yield part()
                items = []
    yield part(last=True)


def _failed(path: Path, offset: int, exc: BaseException) -> Part:
    """A part that carries an error across a pipe: an OSError stays one (the import skips the
    file), anything else becomes a RuntimeError that names it."""
    error: BaseException = (OSError(exc.errno, exc.strerror or str(exc))
                            if isinstance(exc, OSError) else
                            RuntimeError(f"reading {path}: {type(exc).__name__}: {exc}"))
    return Part([], offset, 0, 0, error=error)


def read_ahead(path: Path, offset: int, every: int) -> Iterator[Part]:
    """The parts of one file, read on a second thread one part ahead of the caller; an error
    of the reader reaches the caller with the part it interrupted. The thread stops when the
    caller does."""
    parts: queue.Queue[Part | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(part: Part | None) -> bool:
        while not stop.is_set():
            try:
                parts.put(part, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for part in parts_of(path, offset, every):
                if not put(part):
                    return
        except BaseException as exc:  # handed to the caller, raised there
            put(Part([], offset, 0, 0, error=exc))
        finally:
            put(None)

    threading.Thread(target=produce, name="lore-ingest-read", daemon=True).start()
    try:
        while (got := parts.get()) is not None:
            if got.error is not None:
                raise got.error
            yield got
    finally:
        stop.set()


def edit_row(e: FileEdit, succeeded: int | None = None) -> NewEdit:
    """An edit as stored; its texts feed silent-fix learning, so they are redacted like every
    message."""
    ok = e.succeeded if succeeded is None else bool(succeeded)
    return {"session_id": e.session_id, "message_uuid": e.message_uuid, "tool": e.tool,
            "file_path": e.file_path,
            "file_type": normalize.file_type(Path(e.file_path).suffix) or None,
            "old_text": redact(e.old_text) if e.old_text else e.old_text,
            "new_text": redact(e.new_text) if e.new_text else e.new_text,
            "timestamp": e.timestamp, "succeeded": None if ok is None else int(ok)}


def tool_calls_json(calls: Sequence[Any]) -> str:
    """The calls as stored: their inputs (commands, file contents) with secrets redacted."""
    return json.dumps(redact_value([{"id": c.id, "name": c.name, "input": c.input} for c in calls]),
                      ensure_ascii=False, default=str)


class ReadingProcess:
    """``python -m lore.capture.reading`` beside a large import: every file to read goes in on
    its stdin at once (path, offset), and the parts of each come back on its stdout in that
    order, each file ended by None. The pipe holds the reader back when it is far ahead. If the
    writer stops before the end, the process is stopped."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.jobs: list[tuple[Path, int]] = []

    def submit(self, jobs: list[tuple[Path, int]], every: int) -> None:
        self.jobs = list(jobs)
        if not jobs:
            return
        self.proc = subprocess.Popen([sys.executable, "-m", "lore.capture.reading"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        feed = threading.Thread(target=self._feed, args=(self.proc, jobs, every),
                                name="lore-ingest-jobs", daemon=True)
        feed.start()  # the job list may outgrow the pipe while the reader writes parts

    @staticmethod
    def _feed(proc: subprocess.Popen[bytes], jobs: list[tuple[Path, int]], every: int) -> None:
        assert proc.stdin is not None
        try:
            for path, offset in jobs:
                pickle.dump((str(path), offset, every), proc.stdin)
            pickle.dump(None, proc.stdin)
            proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the process was stopped

    def next_file(self) -> Iterator[Part]:
        """The parts of the next file submitted; its error, if any, after the whole file."""
        path, _ = self.jobs.pop(0)
        proc = self.proc
        if proc is None or proc.stdout is None:
            raise RuntimeError(f"reading {path}: no reading process")
        error: BaseException | None = None
        done = False
        try:
            while True:
                try:
                    got = pickle.load(proc.stdout)
                except (EOFError, pickle.UnpicklingError, AttributeError):
                    raise RuntimeError(f"reading {path}: the reading process stopped") from None
                if got is None:
                    done = True
                    break
                if got.error is not None:
                    error = got.error
                    continue
                yield got
        finally:
            if not done:
                self.close()
        if error is not None:
            raise error

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            # At the end it has already left; stopped midway it is blocked writing parts.
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()


def serve(jobs: IO[bytes], out: IO[bytes]) -> None:
    """The reading process's loop: jobs in, parts out, None after each file."""
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        if job is None:
            return
        path, offset, every = job
        try:
            for part in parts_of(Path(path), offset, every):
                pickle.dump(part, out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
        except Exception as exc:  # noqa: BLE001 - handed to the importing process, raised there
            pickle.dump(_failed(Path(path), offset, exc), out)
        pickle.dump(None, out)
        out.flush()


if __name__ == "__main__":
    import signal

    # Parts are pickled as lore.capture.reading.Part, not as this __main__'s copy of the class.
    from lore.capture.reading import serve

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importing process decides when to stop
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:
        pass
