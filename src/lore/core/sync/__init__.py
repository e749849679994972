"""One memory across devices through `lore serve` (docs/server.md, "Sync").

A device **pushes** what it wrote since the last acknowledged push — lessons (from the change
log every lesson write appends to in its own transaction), captured corrections, conversation
sessions and messages, the agent's edits — in batches, each redacted before it leaves. Each
stream has a cursor in ``meta`` that moves only after the server acknowledged the batch, so a
cut connection resends the same records; the server keeps (device, kind, record id, content
hash) of everything it received and stores nothing twice.

A device **pulls** the lessons a person decided on (approved rules, hand-written active
lessons, rejected rules with the reason) from the server's change log, with a cursor the
device keeps. Two devices that changed the same lesson resolve the same way everywhere: the
later ``updated_at`` wins, a tie goes to the greater device id, and the version that lost is
kept in ``lesson_history``.

Nothing is trusted by name (protocol 3). A batch is named by the SHA-256 of its stream, its
cursors and its records, and the server computes the name again: a batch id that repeats after
a database was reset names the same records or is refused. Every record has an id that is the
same on every device and after any reset: a message its uuid, a correction its event id, a
lesson or a session its own id, an edit the hash of what it changed. The server binds each
device to the write token it first pushed with, refuses records of another device, lesson
dates outside 2000 .. tomorrow and ids that disagree with their data, and keeps its view of
each device's cursors: a device whose cursor is ahead of that view (the server was restored)
sends again what the server lacks, and one behind it (its own database was reset or restored)
sends what it holds and the server stores what is new.

A device's clock is not trusted: a lesson date more than ``SKEW`` (five minutes) ahead of the
server's clock is stored as the server's now (a forged or drifting date would otherwise win
every later conflict), and the push's answer says how many dates were so clamped and how far
ahead the furthest was. The client also compares its clock with the server's ``Date`` header;
`lore sync` and `lore sync --status` report either.

A **deletion** travels as a lesson record whose data is a tombstone, ``{"id", "updated_at":
when it was deleted, "deleted": true}``, pushed from and pulled through the same change log,
and it meets edits by the same rule: a deletion later than the version a device holds deletes
it there (that version kept in the history), an edit later than the deletion brings the lesson
back, and the one that lost is kept in the history.

The parts: :mod:`.records` (what is sent: ids, hashes, redaction, checks), :mod:`.device`
(this device: cursors, push, pull), :mod:`.merge` (what is received meets what is here),
:mod:`.server` (the server's side), :mod:`.client` (HTTP, the clock, one run).
"""

from lore.core.sync.device import Sync

__all__ = ["Sync"]
