"""The validated config, remembered between commands.

:func:`lore.config.load_config` validates ``config.yaml`` and the ``LORE_*`` variables that
override it with pydantic once for each change of what decides the result, stores the
validated values in ``$LORE_HOME/.config-cache.json``, and afterwards reads them back without
parsing YAML, importing pydantic or validating: a command that reads a setting or two (``lore
review``, ``lore status``) or shows them (``lore config``) never builds the models, and
one that needs them gets them from ``model_construct`` (sections included), not validation.
Nothing set (no file, or comments only, and no variable) is not validated on load; only
``lore config``, which lists the defaults, stores them (:func:`defaults`).

The entry is signed: an HMAC-SHA256 of its key and payload, under a key of 32 random bytes
kept in ``$LORE_HOME/.config-cache.key`` (0600, made on first use; one another user owns, or
others can read or write, or of the wrong size, is replaced). Whoever can write the entry
but cannot read the key cannot forge one: a forged, altered or unverifiable entry is a miss,
validated again from the file and written again. A home that cannot protect the key (one
others can write, see :mod:`lore.trusted`, or a read-only one) caches nothing. The entry
itself is read like every file that steers Lore (:func:`lore.trusted.read`): a regular file
of the user, of a sane size, never a pipe or a link.

The entry is keyed by a SHA-256 of everything that decides the result: the file's path and
text, the ``LORE_*`` variables that override keys, Lore's version, the source of the loader and
of the models (``config.py``, ``config_models.py``), pydantic's version and where cronsim
(which checks ``schedule.analysis``) is installed, if it is. A miss or any doubt
(no entry, unreadable, another key, a signature that does not match, a plugin name no
longer installed) validates as before and writes the entry again (a temporary file moved into
place, mode 0600); an entry that cannot be written (a read-only home) costs time, nothing else.

Not cached (validated on every load, as before): a file that interpolates ``${VAR}`` (its result
depends on the whole environment, and would write what it interpolates, an API key say, in
clear), and an environment that gives an API key or a URL carrying credentials. A key written
in the file itself is in clear there already; the entry beside it is 0600, as every home file.

Standard library only (pydantic is imported by :meth:`Cached.build`, when the models are needed).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore import __version__, trusted

if TYPE_CHECKING:
    from pydantic import BaseModel

    from lore.config_models import Config

CACHE_FILE = ".config-cache.json"
KEY_FILE = ".config-cache.key"
KEY_BYTES = 32
FORMAT = "lore-config-cache/3"
# Variables whose value is a secret: a config they feed is not cached.
SECRET_VARIABLES = frozenset({"LORE_EMBEDDING_API_KEY"})
CREDENTIALS_IN_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@")
# Settings whose validation asks the installed packages (plugins.is_known): asked again on a hit.
REGISTERED = (("embedding", "backend", "lore.embedders"),
              ("learning", "extractor", "lore.extractors"))


class Cached:
    """The validated values of a config (``Config.model_dump()``), the fields each model was
    given (``model_fields_set``), and the origin of every value (``Settings.sources``)."""

    __slots__ = ("values", "tree", "sources")

    def __init__(self, values: dict[str, Any], tree: dict[str, Any],
                 sources: dict[str, str]) -> None:
        self.values = values
        self.tree = tree
        self.sources = sources

    def build(self) -> Config:
        """The :class:`Config` these values were validated into, built without validating."""
        from lore import config_models

        return _construct(config_models, self.values, self.tree)  # type: ignore[return-value]


def cacheable(text: str, env: dict[str, str | None], interpolation: re.Pattern[str]) -> bool:
    """Whether a config of ``text`` under ``env`` (the overriding variables) may be cached."""
    if interpolation.search(text):
        return False
    for var, value in env.items():
        if value and (var in SECRET_VARIABLES or CREDENTIALS_IN_URL.match(value)):
            return False
    return True


def key(path: Path, text: str, env: dict[str, str | None]) -> str | None:
    """The cache key of the config file ``path`` holding ``text`` under ``env``; None when
    the code that decides the result cannot be read (then nothing is cached)."""
    code = _code_fingerprint()
    if code is None:
        return None
    h = hashlib.sha256()
    for part in (FORMAT, __version__, code, str(path), text,
                 json.dumps(sorted(env.items()))):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def read(home: Path, wanted: str) -> Cached | None:
    """The entry stored under the key ``wanted``; None on a miss or any doubt."""
    try:
        secret = signing_key(home, create=False)
        if secret is None:
            return None
        blob = trusted.read(str(home / CACHE_FILE), trusted.CACHE_BYTES, "config cache")
        if blob is None:
            return None
        stored, digest, payload = blob.split(b"\n", 2)
        if stored.decode() != wanted or not hmac.compare_digest(
                _sign(secret, stored, payload).encode(), digest):
            return None
        data = json.loads(payload)
        cached = Cached(data["values"], data["tree"], data["sources"])
        if not (isinstance(cached.values, dict) and isinstance(cached.tree, dict)
                and isinstance(cached.sources, dict)):
            return None
        return cached if _plugins_known(cached.values) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


DEFAULTS = Path("(nothing set)")  # the path of the defaults' entry in its key


def defaults(home: Path) -> Cached:
    """The defaults (nothing set), for ``lore config``: read from the home's entry, else
    built (pydantic) and stored there under their own key."""
    cache_key = key(DEFAULTS, "", {})
    hit = read(home, cache_key) if cache_key else None
    if hit is not None:
        return hit
    from lore.config_models import Config

    config = Config()
    if cache_key:
        write(home, cache_key, config, {})
    return Cached(config.model_dump(), _fields_tree(config), {})


def write(home: Path, cache_key: str, config: Config, sources: dict[str, str]) -> None:
    """Store ``config`` (just validated) under ``cache_key``, replacing the entry atomically;
    not when JSON would not give the same values back (a YAML date, a number as a key).
    Never raises: a home that cannot take the file (read-only, full, not created yet: reading
    the config never creates it) only loses the speed."""
    try:
        data = {"values": config.model_dump(), "tree": _fields_tree(config), "sources": sources}
        payload = json.dumps(data).encode("utf-8")  # order kept
        if json.loads(payload) != data:
            return
        secret = signing_key(home, create=True)
        if secret is None:  # no key the user alone holds: an entry could be forged
            return
        digest = _sign(secret, cache_key.encode(), payload)
        _place(home, CACHE_FILE, f"{cache_key}\n{digest}\n".encode() + payload)
    except (OSError, TypeError, ValueError):
        pass


def _place(home: Path, name: str, data: bytes, *, first: bool = False) -> bool:
    """``data`` written to a temporary file (0600) in ``home`` and moved to ``name``, replacing
    what is there (a link or a pipe is replaced, never written through); with ``first`` only
    if nothing has that name yet (False: another process was first). OSError as raised."""
    fd, tmp = tempfile.mkstemp(dir=home, prefix=name + ".", suffix=".tmp")
    left: str | None = tmp
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if first:
            try:
                os.link(tmp, home / name)
            except FileExistsError:
                return False
        else:
            os.replace(tmp, home / name)
            left = None
        return True
    finally:
        if left is not None:
            try:
                os.unlink(left)
            except OSError:
                pass


def _sign(secret: bytes, stored_key: bytes, payload: bytes) -> str:
    return hmac.new(secret, stored_key + b"\n" + payload, hashlib.sha256).hexdigest()


def signing_key(home: Path, *, create: bool) -> bytes | None:
    """The key entries are signed with: the home's key file, if it is the user's alone and
    holds :data:`KEY_BYTES` bytes; else, with ``create``, a new one written in its place.
    None when the home cannot protect it (others can write it, it is read-only, it does not
    exist yet) or, without ``create``, when there is none."""
    path = home / KEY_FILE
    try:
        trusted.check_folder(str(home), "config cache")
    except OSError:
        return None
    try:
        found = trusted.read(str(path), 4 * KEY_BYTES, "config cache key", private=True)
    except trusted.Untrusted:
        found = b""  # another user's, readable by others, a link, a pipe: replaced below
    except OSError:
        return None
    if found is not None and len(found) == KEY_BYTES:
        return found
    if not create:
        return None
    secret = os.urandom(KEY_BYTES)
    try:
        # The first key is put in place only if no other process did first (then theirs).
        if not _place(home, KEY_FILE, secret, first=found is None):
            return signing_key(home, create=False)
    except OSError:
        return None
    return secret


def _fields_tree(model: BaseModel) -> dict[str, Any]:
    """The model's class, the fields it was given and the same for each section it holds."""
    from pydantic import BaseModel

    return {"model": type(model).__name__, "set": sorted(model.model_fields_set),
            "sub": {name: _fields_tree(value) for name in type(model).model_fields
                    if isinstance(value := getattr(model, name), BaseModel)}}


def _construct(module: Any, values: dict[str, Any], tree: dict[str, Any]) -> BaseModel:
    cls = getattr(module, tree["model"])
    fields = dict(values)
    for name, sub in tree["sub"].items():
        fields[name] = _construct(module, values[name], sub)
    built: BaseModel = cls.model_construct(_fields_set=set(tree["set"]), **fields)
    return built


def _plugins_known(values: dict[str, Any]) -> bool:
    from lore import plugins

    return all(isinstance(value := values.get(section, {}).get(name), str)
               and plugins.is_known(group, value) for section, name, group in REGISTERED)


_FINGERPRINT: dict[str, str | None] = {}


def _code_fingerprint() -> str | None:
    """What changes the validated result besides the file: the loader's and the models'
    source, pydantic's version (its version.py, read without importing pydantic) and whether
    cronsim is installed. None when one of them cannot be read."""
    if "code" not in _FINGERPRINT:
        from importlib.util import find_spec

        here = Path(__file__).parent
        h = hashlib.sha256()
        try:
            spec = find_spec("pydantic")
            if spec is None or not spec.origin:
                raise OSError("pydantic not found")
            for source in (here / "config.py", here / "config_models.py",
                           here / "config_cache.py", Path(spec.origin).with_name("version.py")):
                h.update(source.read_bytes())
            # Without cronsim a schedule is checked for its five fields only.
            cronsim = find_spec("cronsim")
            h.update(str(cronsim.origin if cronsim else None).encode())
            _FINGERPRINT["code"] = h.hexdigest()
        except (OSError, ImportError, ValueError):
            _FINGERPRINT["code"] = None
    return _FINGERPRINT["code"]
