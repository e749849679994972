"""The house drawn from the imports (scripts/house_map.py): docs/architecture.md shows the rooms
as they import each other now, the rooms import in no circle, no arrow points up the layers of
tests/faces/test_architecture.py, and review is a room of its own."""

from __future__ import annotations

import graphlib
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scripts.house_map import (
    BEGIN,
    END,
    LAZY,
    LOAD,
    SRC,
    TYPES,
    Site,
    arrows,
    block,
    circles,
    kind,
    room_module,
    rooms,
    sites,
)
from scripts.house_map import write as write_map
from test_architecture import LAYERS, layer, modules

ROOT = Path(__file__).resolve().parents[2]


@cache
def house() -> dict[tuple[str, str], list[Site]]:
    """The arrows of src/lore now, from the modules the architecture test has parsed."""
    return arrows(sites(SRC, modules()))


def test_the_docs_show_the_house_as_the_imports_draw_it():
    out = block(SRC, modules())
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "docs/architecture.md lost its house map"
    start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    assert text[start:end] == out, "docs/architecture.md's house map is stale: run `make docs`"


def described(walk: list[str], found: dict[tuple[str, str], list[Site]]) -> str:
    """A circle as its arrows, each with every import line behind it (all of them go, or
    another layer is found, to break the arrow)."""
    steps = []
    for a, b in zip(walk, walk[1:], strict=False):
        lines = ", ".join(f"{s.module}:{s.line} {s.imported} ({s.kind})" for s in found[(a, b)])
        steps.append(f"  {a} -> {b}: {lines}")
    return " -> ".join(walk) + "\n" + "\n".join(steps)


def test_the_rooms_import_in_no_circle():
    found = house()
    named = [described(walk, found) for walk in circles(found)]
    assert not named, "rooms importing each other in a circle:\n" + "\n".join(named)


def upward(found: dict[tuple[str, str], list[Site]]) -> list[str]:
    """Every import behind an arrow that points up the architecture test's layers."""
    return [f"{s.module}:{s.line} imports {s.imported} ({a} -> {b}, {s.kind})"
            for (a, b), behind in found.items()
            if layer(room_module(b)) > layer(room_module(a)) for s in behind]


def test_no_arrow_points_up_the_layers():
    wrong = upward(house())
    assert not wrong, "arrows pointing up the layers:\n" + "\n".join(wrong)


def test_the_up_check_catches_what_it_claims():
    """An arrow from the store to a face, or from a ground-floor module to the facade, is named
    with its import line; one pointing down is not."""
    made = {("store", "cli"): [Site("lore.store.db", 3, "lore.cli", LOAD)],
            ("errors", "api"): [Site("lore.errors", 9, "lore.api", LAZY)],
            ("cli", "store"): [Site("lore.cli.admin", 4, "lore.store", LOAD)]}
    assert upward(made) == ["lore.store.db:3 imports lore.cli (store -> cli, load)",
                            "lore.errors:9 imports lore.api (errors -> api, lazy)"]


def test_every_room_is_in_a_layer_of_its_own_name():
    """A room is one entry of LAYERS: the map's rooms and the layer table name the same things,
    so a new top-level package is placed on a floor when it is made."""
    entries = {p for _, prefixes in LAYERS for p in prefixes}
    assert {room_module(r) for r in rooms()} <= entries
    for r in rooms():
        layer(room_module(r))  # fails with its own message for a room in no layer


def test_review_is_a_room_of_its_own():
    if not (SRC / "review" / "__init__.py").is_file():
        pytest.skip("src/lore/review/ does not exist yet: review still lives in core/ and apply/")
    assert "review" in rooms()
    assert any("lore.review" in prefixes for _, prefixes in LAYERS), (
        "lore.review has no entry of its own in test_architecture.LAYERS")
    strays = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*review*.py")
                    if p.relative_to(SRC).parts[0] in ("core", "apply", "capture", "extract",
                                                       "store", "recall", "api"))
    assert not strays, f"review's modules still outside review/: {strays}"
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert '    review["review/"]' in text.split(BEGIN, 1)[1], "the house map lacks review/"


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder / "pkg"


def test_every_kind_of_import_is_read(tmp_path):
    """Absolute and relative imports, ``from pkg import sub``, imports in a function, a class
    body, a ``try``, under ``TYPE_CHECKING`` (dotted or not, and its ``else``)."""
    src = write(tmp_path, {
        "pkg/__init__.py": "VERSION = 1\n",
        "pkg/a/__init__.py": "from . import x\n",
        "pkg/a/x.py": "from ..b import y\nimport pkg.c\n",
        "pkg/b/__init__.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg.c import Thing\n"),
        "pkg/b/y.py": "def f():\n    from pkg import c\n    return c\n",
        "pkg/c.py": ("class C:\n    import pkg.d as d\ntry:\n    from pkg.a import x\n"
                     "except ImportError:\n    pass\n"),
        "pkg/d.py": "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    from pkg import VERSION\n",
        "pkg/e.py": ("import typing\nif typing.TYPE_CHECKING:\n    import pkg.d\n"
                     "    def g():\n        import pkg.c\nimport os, json\n"),
    })
    found = arrows(sites(src))
    assert {pair: kind(b) for pair, b in found.items()} == {
        ("a", "b"): LOAD, ("a", "c"): LOAD, ("b", "c"): LAZY, ("c", "a"): LOAD, ("c", "d"): LOAD,
        ("d", "__init__"): LOAD, ("e", "c"): TYPES, ("e", "d"): TYPES}
    assert [(s.module, s.line, s.imported) for s in found[("a", "b")]] == [("pkg.a.x", 1, "pkg.b.y")]
    assert sorted(s.kind for s in found[("b", "c")]) == [LAZY, TYPES]
    assert circles(found) == [["a", "c", "a"]]
    assert described(["a", "c", "a"], found) == ("a -> c -> a\n"
                                                 "  a -> c: pkg.a.x:2 pkg.c (load)\n"
                                                 "  c -> a: pkg.c:4 pkg.a.x (load)")
    drawn = block(src)
    assert '    a["a/"]' in drawn and '    c["c"]' in drawn and '    init["__init__"]' in drawn
    assert "    a --> b\n" in drawn and "    b -.-> c\n" in drawn and "    e -. types .-> d\n" in drawn
    assert "| `e` | · | · | `c`, `d` |" in drawn


def test_a_file_without_the_markers_is_refused_and_left_alone(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "house_map.py"), "--write",
                          str(page)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode != 0 and "has no house-map markers" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert page.read_text() == "# A page\n"


def test_writing_replaces_only_the_block(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"before\n\n{BEGIN}\nold map\n{END}\n\nafter\n")
    src = write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "import pkg.b\n", "pkg/b.py": ""})
    write_map(page, src)
    assert page.read_text() == f"before\n\n{block(src)}\nafter\n"
    assert "    a --> b\n" in page.read_text()


edges = st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefg")), max_size=25)


@given(edges)
def test_circles_are_named_exactly_when_there_are_some(pairs):
    """A circle is named when and only when the arrows have one; each named walk is closed,
    follows arrows, passes a room once, and no two walks share a room."""
    pairs = [(a, b) for a, b in pairs if a != b]
    graph: dict[str, set[str]] = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
    try:
        graphlib.TopologicalSorter(graph).prepare()
        acyclic = True
    except graphlib.CycleError:
        acyclic = False
    walks = circles(pairs)
    assert (not walks) == acyclic
    seen: set[str] = set()
    for walk in walks:
        assert walk[0] == walk[-1] and len(walk) >= 3
        assert all((a, b) in pairs for a, b in zip(walk, walk[1:], strict=False))
        inner = walk[:-1]
        assert len(set(inner)) == len(inner) and not seen & set(inner)
        seen |= set(inner)
