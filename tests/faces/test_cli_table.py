"""Tables piped out of the CLI: drawn without rich when the text is plain, exactly as rich draws them."""

from __future__ import annotations

import io
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from lore.cli.common import CELL_MAX, TABLE_WIDTH, plain_table


def rich_table(title: str | None, columns: list[str], rows: list[list[str]]) -> str:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold", show_header=any(columns))
    for col in columns:
        t.add_column(col, overflow="fold", max_width=CELL_MAX)
    for row in rows:
        t.add_row(*row)
    out = io.StringIO()
    Console(file=out, soft_wrap=False, highlight=False, width=TABLE_WIDTH).print(t)
    return out.getvalue()


text = st.text(alphabet=string.ascii_letters + string.digits + " .,-_/()'#", max_size=30)
odd = st.one_of(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
                st.text(alphabet="ab -:[]é\t漢", max_size=90),
                st.text(alphabet="ab[]'#/@\\, ", max_size=30))
wide = st.one_of(text, text, text, odd)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.one_of(st.none(), text),
    st.one_of(st.lists(text.filter(bool), min_size=n, max_size=n), st.just([""] * n)),
    st.lists(st.lists(wide, min_size=n, max_size=n), max_size=8))))
def test_the_plain_table_is_what_rich_prints(case):
    title, columns, rows = case
    plain = plain_table(title, columns, rows)
    if plain is not None:
        assert plain + "\n" == rich_table(title, columns, rows)


def test_plain_rows_are_drawn_without_rich_and_the_rest_by_rich():
    rows = [[f"01J{i:023d}", f"Use tool {i} for task {i % 17}", "active", "0.9"] for i in range(50)]
    plain = plain_table("Rules", ["id", "title", "status", "confidence"], rows)
    assert plain is not None and plain + "\n" == rich_table("Rules", ["id", "title", "status",
                                                                     "confidence"], rows)
    assert plain_table(None, ["a"], [["[bold]x[/bold]"]]) is None  # markup: rich's
    assert plain_table(None, ["a"], [["[]"], ["['auth', 'ci']"]]) is not None  # no markup
    assert plain_table(None, ["a"], [["x" * (CELL_MAX + 1)]]) is None  # folds
    assert plain_table(None, ["a"], [["café"]]) is None  # not ASCII
    assert plain_table(None, ["a"], []) is None
    pairs = [["state", "running"], ["pid", "123"]]  # no header: a list of pairs
    assert plain_table(None, ["", ""], pairs) == "┌───────┬─────────┐\n│ state │ running │\n" \
                                                "│ pid   │ 123     │\n└───────┴─────────┘"
