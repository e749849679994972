"""One request policy (lore.policy) through every face: the same inputs sent to the CLI, the MCP
tools and the REST API (a real Uvicorn server on loopback) give the same lessons. One table:
which project (a folder, '.', 'all', '*', 'global', none), which statuses (the default, a list,
'all'), how many (the default, a number, out of range)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from lore import policy
from server_util import running

pytest.importorskip("fastapi")

WORD = "pnpm"
A, B = "shop", "blog"  # the two projects' folders under tmp_path; the caller stands in A


def seed(lore: Any, root: Path) -> dict[str, str]:
    """Rules in A, in B and global, in several statuses; {name: id}."""
    ids = {}
    for name, project, status in (("a_active", A, "active"), ("a_proposed", A, "proposed"),
                                  ("a_rejected", A, "rejected"), ("b_active", B, "active"),
                                  ("g_active", None, "active")):
        ids[name] = lore.lessons.add(f"Use {WORD} for {name}", f"Run {WORD} install, not npm.",
                                    kind="preference", status=status,
                                    project=str(root / project) if project else "").id
    for name, project in (("a_waits", A), ("b_waits", B)):
        ids[name] = lore.learning.suggest_rule(f"Always run {WORD} dedupe in {name}", "seen twice",
                                              project=str(root / project)).lesson.id
    return ids


# request, project, statuses, limit -> the lessons every face returns (by name); a project
# written {A} or {B} is that folder; "here" rows differ only for REST, which has no "here".
ROWS: list[tuple[str, str | None, list[str] | None, int | None, set[str]]] = [
    ("search", ".", None, None, {"a_active", "g_active"}),
    ("search", "all", None, None, {"a_active", "b_active", "g_active"}),
    ("search", "*", None, None, {"a_active", "b_active", "g_active"}),
    ("search", "global", None, None, {"g_active"}),
    ("search", "{B}", None, None, {"b_active", "g_active"}),
    ("search", ".", ["all"], None, {"a_active", "a_proposed", "a_rejected", "a_waits",
                                    "g_active"}),
    ("search", ".", ["proposed,rejected"], None, {"a_proposed", "a_rejected", "a_waits"}),
    ("search", "all", ["all"], 2, set()),  # any two: the faces agree on which
    ("preferences", ".", None, None, {"a_active", "a_proposed", "a_waits", "g_active"}),
    ("preferences", "all", None, None, {"a_active", "a_proposed", "a_waits", "b_active",
                                        "b_waits", "g_active"}),
    ("preferences", "global", None, None, {"g_active"}),
    ("preferences", "{B}", ["active"], None, {"b_active", "g_active"}),
    ("preferences", ".", ["*"], None, {"a_active", "a_proposed", "a_rejected", "a_waits",
                                       "g_active"}),
    ("review", None, None, None, {"a_waits", "b_waits"}),
    ("review", "{B}", None, None, {"b_waits"}),
    ("review", "all", None, 1, set()),
]
# The one input whose answer depends on where the caller is: none given. The CLI and MCP stand
# in A; REST has no "here", so it answers for every project.
HERE_ROWS = [
    ("search", None, {"a_active", "g_active"}, {"a_active", "b_active", "g_active"}),
    ("preferences", None, {"a_active", "a_proposed", "a_waits", "g_active"},
     {"a_active", "a_proposed", "a_waits", "b_active", "b_waits", "g_active"}),
]


def with_inputs(args: dict[str, Any], project: str | None, statuses: list[str] | None,
                limit: int | None, status_key: str) -> None:
    for key, value in (("project", project), (status_key, statuses), ("limit", limit)):
        if value is not None:
            args[key] = value


def via_cli(run: Any, request: str, project: str | None, statuses: list[str] | None,
            limit: int | None) -> list[str]:
    args = {"search": ["search", WORD, "--no-track"], "preferences": ["recall", "preferences"],
            "review": ["review"]}[request]
    args = [*args, "--json"]
    if project is not None:
        args += ["--project", project]
    for s in statuses or ():
        args += ["--status", s]
    if limit is not None:
        args += ["--limit", str(limit)]
    res = run(*args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    return [r["id"] for r in data[{"search": "results", "preferences": "preferences",
                                   "review": "waiting"}[request]]]


def via_mcp(server: Any, request: str, project: str | None, statuses: list[str] | None,
            limit: int | None) -> list[str]:
    name, args = {"search": ("lore_search", {"query": WORD}),
                  "preferences": ("lore_preferences", {}),
                  "review": ("lore_review_list", {})}[request]
    with_inputs(args, project, statuses, limit, "statuses")

    async def call() -> Any:
        return await server.call_tool(name, args)

    result = anyio.run(call)
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    return [r["id"] for r in data[{"search": "results", "preferences": "preferences",
                                   "review": "waiting"}[request]]]


def via_rest(client: httpx.Client, request: str, project: str | None,
             statuses: list[str] | None, limit: int | None) -> list[str]:
    path, params = {"search": ("/api/v1/search", {"q": WORD}),
                    "preferences": ("/api/v1/preferences", {}),
                    "review": ("/api/v1/review", {})}[request]
    with_inputs(params, project, statuses, limit, "status")
    res = client.get(path, params=params)
    assert res.status_code == 200, f"{res.status_code} {res.text}"
    return [r["id"] for r in res.json()[{"search": "results", "preferences": "preferences",
                                         "review": "waiting"}[request]]]


@pytest.fixture
def faces(lore, run, tmp_path, monkeypatch):
    """(ids by name, {face: call}) over one database, the caller standing in project A."""
    from lore.mcp.server import build_server

    for folder in (A, B):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / A)
    ids = seed(lore, tmp_path)
    server, _ = build_server(lore.settings, "admin", lore=lore)
    with running(lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield ids, {"cli": lambda *a: via_cli(run, *a), "mcp": lambda *a: via_mcp(server, *a),
                    "rest": lambda *a: via_rest(client, *a)}


def test_every_face_answers_the_same_request_the_same(faces, tmp_path):
    ids, calls = faces
    names = {v: k for k, v in ids.items()}
    for request, project, statuses, limit, want in ROWS:
        where = None if project is None else project.format(A=tmp_path / A, B=tmp_path / B)
        got = {face: call(request, where, statuses, limit) for face, call in calls.items()}
        row = (request, project, statuses, limit)
        assert {face: sorted(found) for face, found in got.items()} == {
            face: sorted(got["cli"]) for face in got}, row
        if limit is not None:
            assert len(got["cli"]) == limit, row
        else:
            assert {names[i] for i in got["cli"]} == want, row
    for request, project, here_want, rest_want in HERE_ROWS:
        got = {face: {names[i] for i in call(request, project, None, None)}
               for face, call in calls.items()}
        assert got == {"cli": here_want, "mcp": here_want, "rest": rest_want}, request


@pytest.mark.parametrize("limit", [0, -1, policy.REQUESTS["search"].most + 1])
def test_a_limit_out_of_range_is_refused_by_every_face(faces, run, limit):
    _, calls = faces
    res = run("search", WORD, "--limit", str(limit))
    assert res.exit_code == 2 and "--limit" in res.output
    with pytest.raises(Exception, match="less than or equal|greater than or equal"):
        calls["mcp"]("search", None, None, limit)
    with pytest.raises(AssertionError, match="422"):
        calls["rest"]("search", None, None, limit)


def test_the_policy_knows_every_status_the_store_has(lore):
    assert set(policy.EVERY_STATUS) == {s.name for s in lore.lessons.reference("status")}


def test_the_policy_in_words():
    assert policy.scope("ALL", "search") == policy.Scope(None, every=True)
    assert policy.scope(" none ", "search").only_global
    assert policy.scope(None, "review", here="/x").every  # a person reviews everything
    assert policy.scope("/no/such/folder", "search").project == "/no/such/folder"
    assert policy.statuses(None, "preferences") == ("active", "proposed")
    assert policy.statuses(["active, proposed", "active"], "search") == ("active", "proposed")
    assert policy.limit(None, "conversations") == 5
    for bad in (0, 101, True, "3"):
        with pytest.raises(Exception, match="limit must be a whole number from 1 to 100"):
            policy.limit(bad, "search")  # type: ignore[arg-type]
