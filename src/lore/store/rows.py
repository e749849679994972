"""The rows the store protocol passes: each shape named once, so that mypy checks every key
the core reads or writes against what the store returns.

Why ``TypedDict`` for every one, and no dataclass: a row is what a query returned, read by key
in the core and handed on unchanged as a dict to the faces (``--json``, MCP results, the REST
API, templates) and to sync (records sent over the wire, reshaped in place). A mapping keeps
every one of those uses as it is, the JSON shapes of docs/json.md included, at no cost per row;
a dataclass would need converting back at each face. The one row passed around a lot as a
value, a lesson, is already a frozen dataclass (:class:`lore.models.Lesson`); so is
:class:`~lore.store.protocol.FileState`.

A key is required where the store always returns it, with ``None`` in its type when the column
may be NULL. A row a caller hands to the store names every column the insert writes
(``NewMessage``, ``NewEdit``, ``NewCheck``, ``NewRun``, ``NewScheduleRun``, ``NewToken``); ``total=False``
marks the two partial shapes, the columns an update sets (``CheckChanges``) and what a
SessionStart context reported (``ContextLoadData``, defaults filled by the store). Shapes
that share columns share a base (``CapturedFields``, ``EditFields``). Text columns that hold
JSON (``files``, ``cues``, ``tool_calls``, ``metadata``) are ``str`` as stored; a row whose
JSON the store decodes says so in its type (``ContextLoad.shown``, ``ScheduleRun.summary``).
Integers SQLite keeps for booleans (``is_meta``, ``injected``, ``succeeded`` …) are ``int``,
0 or 1, as on Postgres.

A backend states a query's row type once, where it reads the row (``cast``): the driver's rows
are untyped. ``tests/store/test_store_contract.py`` checks that statement on both backends,
key by key and value by value, so the rest of the code can rely on it. Sync casts the records
another device sent the same way: their keys are the sender's, and the store's columns check
them.

Still ``dict[str, Any]``: the lesson values of :class:`~lore.store.protocol.LessonRow`
(validated by the core's models) and free-form JSON a row carries (snapshot data, search
filters, run summaries).
"""

from __future__ import annotations

from typing import Any, TypedDict

# ---- captured messages (corrections) ---------------------------------------------------


class CapturedFields(TypedDict):
    """What a captured message holds as it was captured (and as sync sends it)."""

    event_id: str
    session_id: str | None
    project: str | None
    user_message: str
    assistant_proposal: str | None
    files: str  # JSON list of paths
    at: str
    origin: str
    message_uuid: str | None
    proposal_uuid: str | None
    diff: str | None
    correction_type: str | None


class Correction(CapturedFields):
    """A captured message and the verdict on it (``SELECT * FROM corrections``)."""

    id: int
    status: str  # new | judging | learned | none | one-off | synced …
    label: str | None
    durable: int | None
    probability: float | None
    cues: str  # JSON list of cue names
    lesson_id: str | None
    action: str | None
    device: str | None
    author: str | None


class RuleCandidate(TypedDict):
    """A rule a new one may restate or contradict."""

    seq: int
    id: str
    title: str
    content: str
    kind: str
    status: str
    project: str | None
    pref_rejected: str | None
    pref_preferred: str | None
    metadata: str  # JSON object


class EditFields(TypedDict):
    """What every row of an agent's file edit holds (``file_edits``)."""

    session_id: str
    message_uuid: str
    tool: str
    file_path: str
    file_type: str | None
    old_text: str | None
    new_text: str | None
    timestamp: str | None


class UncheckedEdit(EditFields):
    """An edit the agent made, not compared with the file yet, with its session's project."""

    id: int
    project: str | None


class ImportedMessage(TypedDict):
    """One imported transcript message, with its session's project."""

    uuid: str
    session_id: str
    role: str
    text: str
    timestamp: str | None
    project: str | None


class LearnedCorrection(TypedDict):
    """A captured message the learner merged into a rule."""

    id: int
    session_id: str | None
    project: str | None
    at: str
    lesson_id: str
    action: str | None
    files: str  # JSON list of paths


class SessionSpan(TypedDict):
    """A session seen (imported, or only through captured messages)."""

    id: str
    project: str | None
    at: str | None
    file_types: set[str]


# ---- imported transcripts --------------------------------------------------------------


class NewMessage(TypedDict):
    """A transcript message to store (``insert_message``)."""

    uuid: str
    session_id: str
    parent_uuid: str | None
    role: str
    speaker: str | None
    text: str
    tool_calls: str  # JSON list of calls
    timestamp: str | None
    is_sidechain: int
    agent_id: str | None
    is_meta: int
    injected: int


class NewEdit(EditFields):
    """A file edit of the agent to store (``insert_edit``)."""

    succeeded: int | None


class ChunkToContextualise(TypedDict):
    id: int
    first_seq: int
    last_seq: int
    text: str
    started_at: str | None


class ChunkRow(TypedDict):
    """A chunk of a conversation with what its session says of it (a recall hit)."""

    id: int
    session_id: str
    project: str | None
    first_seq: int
    last_seq: int
    started_at: str | None
    ended_at: str | None
    speakers: str
    text: str
    agent: str
    git_branch: str | None
    title: str | None


class NeighbourTurn(TypedDict):
    """A message around a chunk; ``in_chunk``: one of the chunk's own."""

    seq: int
    uuid: str
    role: str
    speaker: str | None
    text: str
    timestamp: str | None
    is_meta: int
    injected: int
    in_chunk: bool


class SessionRow(TypedDict):
    """An imported (or hook-seen) session (``SELECT * FROM sessions``)."""

    id: str
    agent: str
    project: str | None
    device: str
    git_branch: str | None
    started_at: str | None
    ended_at: str | None
    source_file: str | None
    title: str | None
    speakers: str
    message_count: int


# ---- checks on rules ---------------------------------------------------------------------


class NewCheck(TypedDict):
    """A check on a rule to store (``insert_check``): not allowed through yet."""

    id: str
    lesson_id: str
    command: str | None
    path: str | None
    content: str | None
    tool: str | None
    mode: str
    status: str
    origin: str
    note: str
    created_at: str
    updated_at: str
    reviewed_at: str | None


class Check(NewCheck):
    """A check on a rule (docs/apply.md)."""

    allowed_until: str | None  # until when a blocking check lets calls through


class CheckChanges(TypedDict, total=False):
    """What a review, a change of mode or an allowance sets on a check (the rest stays)."""

    status: str
    mode: str
    allowed_until: str | None
    updated_at: str
    reviewed_at: str | None


class CheckEvent(TypedDict):
    """A match the hooks reported (blocked, reminded, allowed, ran)."""

    event_id: str
    check_id: str
    lesson_id: str
    session_id: str | None
    project: str | None
    at: str
    tool: str | None
    outcome: str
    matched: str


class ToolCallTurn(TypedDict):
    """An assistant turn with tool calls, with its session's project."""

    seq: int
    uuid: str
    session_id: str
    project: str | None
    timestamp: str | None
    tool_calls: str  # JSON list of calls


class HookEdit(TypedDict):
    """A file change the PostToolUse hook recorded."""

    id: int
    session_id: str
    project: str | None
    timestamp: str | None
    tool: str
    file_path: str
    new_text: str | None
    succeeded: int | None


class LaterTurn(TypedDict):
    seq: int
    role: str
    text: str
    is_meta: int
    injected: int


class LoadedSession(TypedDict):
    """A recorded session start: the lesson ids it showed (``shown``: a JSON list) and the
    rules the files it read at start held (``in_files``: a JSON list)."""

    session_id: str | None
    project: str | None
    at: str
    shown: str
    in_files: str


# ---- session context ---------------------------------------------------------------------


class ContextRule(TypedDict):
    """A rule or preference the SessionStart context tells."""

    id: str
    title: str
    content: str
    kind: str
    project: str | None
    pref_context: str | None
    pref_rejected: str | None
    pref_preferred: str | None
    pref_reasoning: str | None
    score: float | None
    ordinal: int
    learning: str | None  # metadata.learning as JSON text (None: not a learned rule)


class OtherLesson(TypedDict):
    id: str
    title: str
    kind: str


class ContextLoadData(TypedDict, total=False):
    """What one SessionStart context showed and left out (``insert_context_load``)."""

    shown: list[str]
    dropped: list[str]
    chars: int
    dropped_chars: int
    in_files: list[str]  # rules a file the agent reads at start already states


class ContextLoad(TypedDict):
    """A recorded SessionStart context."""

    event_id: str
    session_id: str | None
    project: str | None
    at: str
    shown: list[str]
    dropped: list[str]
    chars: int
    dropped_chars: int


# ---- learning from the work --------------------------------------------------------------


class SessionStart(TypedDict):
    session_id: str
    project: str | None
    started_at: str
    start_commit: str | None
    start_branch: str | None
    start_git: str | None


class NewRun(TypedDict):
    """What one analysis run decided (``record_run``)."""

    event_id: str | None
    at: str
    trigger: str
    session_id: str | None
    project: str | None
    outcome: str
    reason: str
    score: int | None
    threshold: int | None
    base: str | None
    head: str | None
    created: int
    reinforced: int
    lesson_ids: list[str]
    error: str | None


class AnalysisRun(NewRun):
    """A recorded analysis run."""

    id: int


class LastError(TypedDict):
    at: str
    error: str


class RunSummary(TypedDict):
    """Sessions seen, runs by outcome, skips by reason, the last run and the last error."""

    sessions_seen: int
    outcomes: dict[str, int]
    skipped_by_reason: dict[str, int]
    last_session_start: SessionStart | None
    created: int
    reinforced: int
    last_run: AnalysisRun | None
    last_error: LastError | None


class LessonActivity(TypedDict):
    """A learned rule created or changed since a moment (what a digest lists)."""

    id: str
    title: str
    kind: str
    status: str
    project: str | None
    source: str | None
    created_at: str
    review: Any  # the JSON record of a person's decision, or None
    rejected_reason: str | None


class LessonsAdded(TypedDict):
    day: str  # YYYY-MM-DD
    project: str | None
    count: int


class NewScheduleRun(TypedDict):
    """One scheduled run to keep (``record_schedule_run``), finished or skipped."""

    trigger: str
    started_at: str
    finished_at: str
    duration_ms: int
    outcome: str  # ok | failed | skipped
    summary: dict[str, Any]
    error: str | None


class ScheduleRun(TypedDict):
    """A kept scheduled run."""

    id: int
    trigger: str
    started_at: str
    finished_at: str | None
    duration_ms: int | None
    outcome: str
    summary: dict[str, Any]
    error: str | None


# ---- access tokens -----------------------------------------------------------------------


class NewToken(TypedDict):
    """An access token to store: a salted hash, never the secret."""

    id: str
    name: str
    scope: str
    salt: str
    secret_hash: str
    created_at: str


class Token(NewToken):
    last_used_at: str | None
    revoked_at: str | None


# ---- sync --------------------------------------------------------------------------------


class OwnCorrection(CapturedFields):
    """A message captured on this device, as a push reads it (``corrections_after``)."""

    id: int


class PushedMessage(NewMessage):
    """A transcript message as a push reads it (``messages_after``)."""

    seq: int


class PushedEdit(NewEdit):
    """A file edit as a push reads it (``edits_after``)."""

    id: int


class SyncedCorrection(CapturedFields):
    """A captured message from another device, to keep as evidence (``status`` 'synced')."""

    device: str


class SessionRecord(TypedDict):
    """A session as sync sends it."""

    id: str
    agent: str
    project: str | None
    device: str
    git_branch: str | None
    source_file: str | None
    title: str | None


class Batch(TypedDict):
    """A batch a server received from a device."""

    batch_id: str
    device: str
    received_at: str
    records: int
    stored: int


class HistoryEntry(TypedDict):
    """A lesson version a sync conflict replaced or refused (``data``: the lesson as JSON)."""

    lesson_id: str
    device: str
    updated_at: str
    at: str
    outcome: str  # replaced | refused
    winner_device: str
    winner_updated_at: str
    data: dict[str, Any]


# ---- lessons -----------------------------------------------------------------------------


class LessonBrief(TypedDict):
    """The columns a search result needs of a lesson."""

    seq: int
    id: str
    title: str
    kind: str
    confidence: str
    usage_count: int
    updated_at: str
    ordinal: int
