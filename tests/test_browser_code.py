"""Where the browser code lives: in static modules, not inline in templates; and only the send queue writes.

Inline scripts cannot be linted, cached or shared, and each one that saved work grew its own queue (one retried
refusals forever, one let two saves of a turn race). So templates carry only ``<script src=…>`` tags (and the data
blocks ``json_script`` renders, which are not in the template source), and only ``static/ecast/send.js`` sends
POST/PUT/PATCH/DELETE from the browser (``static/ecast/poll.js`` reads job progress).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The only browser modules allowed to write to the server.
WRITERS = frozenset({"ecast/send.js", "ecast/poll.js"})

HANDLER = re.compile(r"<[a-zA-Z][^>]*?\son[a-z]+\s*=", re.DOTALL)  # onchange="…", onclick="…" inside a tag
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
# A request method other than a read (a literal write verb, or a variable that may hold one), an XMLHttpRequest,
# or a beacon.
WRITE = re.compile(
    r"""\bmethod\s*:(?!\s*["'](?:GET|HEAD)["'])"""
    r"""|\bXMLHttpRequest\b|\bsendBeacon\b|\.open\(\s*["'](?:POST|PUT|PATCH|DELETE)""",
    re.IGNORECASE,
)


def inline_scripts(templates: Path) -> dict[str, int]:
    """Bytes of inline script code per template (``<script>`` bodies; a ``src`` tag with a body counts too)."""
    found: dict[str, int] = {}
    for path in sorted(templates.rglob("*.html")):
        code = sum(len(body.strip().encode()) for _attrs, body in SCRIPT.findall(path.read_text(encoding="utf-8")))
        if code:
            found[path.relative_to(templates).as_posix()] = code
    return found


def inline_handlers(templates: Path) -> list[str]:
    """Templates with an inline event handler attribute (``onchange="…"``): code in markup, like an inline script."""
    return [
        path.relative_to(templates).as_posix()
        for path in sorted(templates.rglob("*.html"))
        if HANDLER.search(path.read_text(encoding="utf-8"))
    ]


def writing_modules(static: Path) -> list[str]:
    """Static JS modules that send a write request (fetch with a non-GET method, XMLHttpRequest, a beacon)."""
    return [
        path.relative_to(static).as_posix()
        for path in sorted(static.rglob("*.js"))
        if WRITE.search(path.read_text(encoding="utf-8"))
    ]


def test_no_template_carries_inline_script_code():
    assert inline_scripts(ROOT / "templates") == {}


def test_no_template_carries_an_inline_event_handler():
    # data-autosubmit, data-confirm and data-select-on-click (static/ecast/forms.js) say it in markup instead.
    assert inline_handlers(ROOT / "templates") == []


def test_only_the_send_queue_writes_to_the_server_from_the_browser():
    assert sorted(set(writing_modules(ROOT / "static")) - WRITERS) == []


def test_the_send_queue_is_a_writer_the_guard_sees():
    assert "ecast/send.js" in writing_modules(ROOT / "static")  # else the pattern above has gone blind


def test_the_guards_catch_an_inline_script_and_a_page_posting_on_its_own(tmp_path):
    (tmp_path / "judging").mkdir()
    # As the rating-done page carried its undo key, and the labelling page saved labels, before send.js.
    (tmp_path / "judging" / "done.html").write_text(
        '{% block scripts %}<script>\ndocument.addEventListener("keydown", () => {});\n</script>{% endblock %}'
    )
    (tmp_path / "judging" / "clean.html").write_text(
        '<script src="{% static \'ecast/send.js\' %}"></script><script src="x.js">\n</script>'
    )
    (tmp_path / "judging" / "picker.html").write_text(
        '<form><select name="collection" onchange="this.form.submit()"></select>'
        '<input name="online" data-x="onion=1"></form>'
    )
    (tmp_path / "judging" / "labeling.js").write_text(
        'const r = await fetch(api, {\n  method: "POST",\n  headers: {"X-CSRFToken": csrf},\n});'
    )
    (tmp_path / "judging" / "poll.js").write_text('fetch(url, { method: "GET", credentials: "same-origin" });')
    (tmp_path / "judging" / "xhr.js").write_text("const x = new XMLHttpRequest();")
    assert list(inline_scripts(tmp_path)) == ["judging/done.html"]
    assert inline_handlers(tmp_path) == ["judging/picker.html"]
    (tmp_path / "judging" / "picker.html").write_text(
        '<select name="online" data-autosubmit data-clear="a b"></select>'
    )
    assert inline_handlers(tmp_path) == []
    assert writing_modules(tmp_path) == ["judging/labeling.js", "judging/xhr.js"]


TITLE = re.compile(r"{%\s*block title\s*%}(.*?){%\s*endblock", re.DOTALL)


def test_every_page_title_is_plain_text():
    # A title block holding markup (a section pasted into it) prints that markup in the browser's tab.
    offending = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "templates").rglob("*.html")
        for title in TITLE.findall(path.read_text(encoding="utf-8"))
        if "<" in title
    ]
    assert offending == []
