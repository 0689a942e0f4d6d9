"""What a file looks like, from its first bytes: the import formats ecast reads and the ones it knows but cannot.

An import first sniffs the head of its file (at most ``HEAD_BYTES`` of it, gunzipped on the fly, never the whole
file) and names the format it looks like. When that is not a format the chosen import kind reads, the import
fails with one sentence saying what the file looks like and what the kind reads, instead of one error per line;
a file that looks like a format the kind reads (or like nothing known) goes on to the parser, whose per-line
errors then say what is wrong inside it. Plain Python, no Django: the registry maps kinds to the names below.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HEAD_BYTES = 256 * 1024  # enough for the first topic of any CAsT/iKAT topics file
SAMPLE_LINES = 50
GZIP_MAGIC = b"\x1f\x8b"
# The keys ``ecast.imports.formats.passages`` reads a passage JSONL object by (kept equal by a test).
ID_KEYS = ("id", "docid", "_id", "passage_id", "pid")
TEXT_KEYS = ("contents", "text", "body", "passage")

# Formats some import kind reads: name → how the "reads …" part of a message lists it.
READABLE: dict[str, str] = {
    "cast_topics_json": "CAsT 2019–2021 topics JSON (a list of topics, each with 'number' and 'turn')",
    "cast2022_tree_json": "CAsT 2022 tree topics JSON (turns with 'participant' and 'parent')",
    "cast2022_flattened_json": "CAsT 2022 flattened topics JSON (one entry per path, turn numbers such as '1-1')",
    "ikat_topics_json": (
        "iKAT 2023–2025 topics JSON (a list of topics, each with a 'ptkb' and 'turns' or, 2025, 'responses')"
    ),
    "cast2019_resolved_tsv": "CAsT 2019 resolved rewrites TSV (turn_id<TAB>rewrite)",
    "ecast_csv": "the ECAsT paraphrase CSV (TURN_ID,MANUAL PARAPHRASE,RAW PARAPHRASE)",
    "utterance_labels_tsv": "utterance classes TSV (qid<TAB>utterance<TAB>SE|FT|PT)",
    "castur_tsv": "CAsTUR TSV (current_turn<TAB>relevant_turn)",
    "trec_qrels": "TREC qrels (qid iter docid grade)",
    "trec_run": "TREC runs (qid Q0 docid rank score tag)",
    "pyterrier_run_csv": "PyTerrier results CSV (qid,docno,score[,rank])",
    "ikat_ptkb_qrels": "iKAT PTKB relevance (turn_id 0 statement_number 0|1)",
    "passages_tsv": "passages TSV (id<TAB>text)",
    "passages_jsonl": (
        f"passages JSONL (one object a line with an id — {', '.join(ID_KEYS)} — and a text — {', '.join(TEXT_KEYS)}; "
        "or iKAT's doc_id, passage_id and passage_text)"
    ),
    "crowd_csv": "MTurk batch CSV with Input.passage_id and Input.passage columns",
    "clef_queries_xml": "CLEF eHealth 2016–2018 queries XML (<queries><query><id>…</id><en>…</en>)",
    "clef_topics_xml": "CLEF eHealth 2021 topics XML (<topics><topic><id>…</id><query>…</query>)",
    "rag_answers_jsonl": (
        "TREC RAG answer JSONL (run_id, topic_id, references, answer: [{text, citations}]; 2025: under 'metadata')"
    ),
    "ikat_responses_json": (
        "iKAT responses JSON (a run {run_name, turns: [{turn_id, responses}]} or {turn: {run: text}})"
    ),
    "responses_tsv": "responses TSV (turn<TAB>run<TAB>response)",
    "nuggets_jsonl": "nuggetizer JSONL (qid, nuggets: [{text, importance}]; with run_id and assignments)",
    "ikat_nuggets_json": 'iKAT nugget JSON ({turn: {"[n]": {text, relevance}}})',
    "citation_support_jsonl": "TREC RAG citation support JSONL (topic_id, run_id, sentences: [{text, citations}])",
}

# iKAT passage texts JSONL: one passage a line, named "<doc_id>:<passage_id>" in runs and qrels (kept equal to
# ``ecast.imports.formats.passages.IKAT_KEYS`` by a test).
IKAT_KEYS = ("doc_id", "passage_id", "passage_text")

# Qrels and run turn ids of collections whose topics another import brings, or none yet: what to say about them.
ID_SCHEMES: dict[str, tuple[re.Pattern[str], str]] = {
    "cast2022": (
        re.compile(r"^\d+_\d+-\d+$"),
        "import its CAsT 2022 topics first, with “CAsT 2022 topics JSON (tree or flattened)”",
    ),
    "ikat": (re.compile(r"^\d+-\d+_\d+$"), "import its iKAT topics first, with “iKAT topics JSON (2023–2025)”"),
}


@dataclass(frozen=True)
class Head:
    """The first bytes of a file (gunzipped), and whether they are the whole of it."""

    data: bytes
    complete: bool
    gzipped: bool = False


@dataclass(frozen=True)
class Sniffed:
    """What a file looks like: the readable formats it matches (none: no kind reads it), and a phrase for messages.

    ``lead`` replaces "This looks like …" in messages (an empty file); ``id_scheme`` names turn ids of a collection
    whose topics ecast cannot import (CAsT 2022, iKAT) seen in a qrels or run file, with a few of them in ``qids``.
    """

    formats: frozenset[str]
    looks: str
    lead: str = ""
    id_scheme: str = ""
    qids: tuple[str, ...] = ()


def _unknown(looks: str, lead: str = "") -> Sniffed:
    return Sniffed(frozenset(), looks, lead)


def _known(name: str, looks: str) -> Sniffed:
    return Sniffed(frozenset({name}), looks)


# ---------------------------------------------------------------- reading the head


def read_head(fh: IO[bytes], limit: int = HEAD_BYTES) -> Head:
    """The first ``limit`` bytes of an open binary file, inflated when it is gzip (never more than ``limit``)."""
    first = fh.read(limit)
    if not first.startswith(GZIP_MAGIC):
        return Head(first, complete=len(first) < limit or not fh.read(1))
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    data = first
    try:
        while len(out) < limit:
            out += inflate.decompress(data, limit - len(out))
            data = inflate.unconsumed_tail
            if inflate.eof:
                break
            if not data:
                data = fh.read(1 << 16)
                if not data:
                    break  # truncated: the reader reports the corrupt gzip file
    except zlib.error:
        return Head(bytes(out), complete=False, gzipped=True)
    complete = inflate.eof and not inflate.unused_data and not fh.read(1)
    return Head(bytes(out), complete=complete, gzipped=True)


def read_head_of(path: Path, limit: int = HEAD_BYTES) -> Head | None:
    """``read_head`` of a file on disk; None when it cannot be opened (the reader then says why)."""
    try:
        with open(path, "rb") as fh:
            return read_head(fh, limit)
    except OSError:
        return None


# ---------------------------------------------------------------- binary files

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\xfd7zXZ\x00", "an xz-compressed file (ecast reads plain or gzip files)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file (ecast reads plain or gzip files)"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"\x93NUMPY", "a NumPy array file"),
    (GZIP_MAGIC, "a gzip file compressed twice"),
)
_BZIP2 = re.compile(rb"^BZh[1-9]1AY&SY")


def _binary(data: bytes) -> str | None:
    for magic, looks in _SIGNATURES:
        if data.startswith(magic):
            return looks
    if _BZIP2.match(data):
        return "a bzip2-compressed file (ecast reads plain or gzip files)"
    if data[257:262] == b"ustar":
        return "a tar archive"
    if b"\x00" in data:
        return "a binary file (it contains NUL bytes)"
    return None


# ---------------------------------------------------------------- XML


_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)", re.S | re.I)
_ROOT = re.compile(r"\s*<([A-Za-z_][\w.:-]*)")


def _xml(text: str) -> Sniffed:
    if re.match(r"<!doctype\s+html", text, re.I):
        return _unknown("an HTML page")
    pos = 0
    while match := _PROLOG.match(text, pos):
        pos = match.end()
    root = _ROOT.match(text, pos)
    name = root.group(1) if root else ""
    if name == "topics" and re.search(r"<topic\b", text):
        return _known("clef_topics_xml", "CLEF eHealth 2021 topics XML (<topics><topic>…)")
    if name == "queries" and re.search(r"<query\b", text):
        return _known("clef_queries_xml", "CLEF eHealth queries XML (<queries><query>…)")
    if name.lower() == "html":
        return _unknown("an HTML page")
    if name == "top":
        return _unknown("TREC SGML topics (<top><num>…)")
    if not name:
        return _unknown("an XML-like file without a root element")
    return _unknown(f"an XML file with root element <{name}>")


# ---------------------------------------------------------------- JSON and JSON Lines


def _keys(obj: dict[str, Any], limit: int = 6) -> str:
    keys = [repr(k) for k in list(obj)[:limit]]
    return ", ".join(keys) + (", …" if len(obj) > limit else "")


def _topics_list(first: Any) -> Sniffed:
    """A JSON list, judged by its first element."""
    if not isinstance(first, dict):
        return _unknown(f"a JSON list of {type(first).__name__} values")
    turns = first.get("turn")
    if isinstance(turns, list):
        objs = [t for t in turns if isinstance(t, dict)]
        if any("participant" in t or "parent" in t for t in objs):
            return _known("cast2022_tree_json", "a CAsT 2022 tree topics file (turns with 'participant'/'parent')")
        if any(isinstance(t.get("number"), str) and "-" in t["number"] for t in objs):
            return _known(
                "cast2022_flattened_json", "a CAsT 2022 flattened topics file (branch-aware turn numbers such as '1-1')"
            )
    if "responses" in first or isinstance(first.get("ptkb"), list):
        return _known("ikat_topics_json", "an iKAT 2025 topics file (topics with a 'ptkb' list and 'responses')")
    if "ptkb" in first or "turns" in first:
        number = first.get("number")
        year = "2023 " if isinstance(number, str) and "-" in number else "2024 " if isinstance(number, int) else ""
        return _known("ikat_topics_json", f"an iKAT {year}topics file (topics with a 'ptkb' and 'turns')")
    if "number" in first or "turn" in first:
        return _known("cast_topics_json", "CAsT topics JSON")
    return _unknown(f"a JSON list of objects with keys {_keys(first)}")


def _response_level(obj: dict[str, Any]) -> Sniffed | None:
    """The response-level JSON formats (issue 33): a JSONL row or a whole JSON object."""
    if "answer" in obj and ("topic_id" in obj or isinstance(obj.get("metadata"), dict)):
        return _known("rag_answers_jsonl", "TREC RAG answer JSONL")
    if "nuggets" in obj and "qid" in obj:
        with_runs = " with assignments" if "run_id" in obj else ""
        return _known("nuggets_jsonl", f"nuggetizer JSONL{with_runs}")
    if "sentences" in obj and "topic_id" in obj and "run_id" in obj:
        return _known("citation_support_jsonl", "TREC RAG citation support JSONL")
    if "run_name" in obj and "turns" in obj:
        return _known("ikat_responses_json", "an iKAT run with responses (run_name, turns)")
    first = next(iter(obj.values()), None)
    if isinstance(first, dict) and first:
        inner = next(iter(first.values()))
        if isinstance(inner, str):
            return _known("ikat_responses_json", "iKAT responses JSON ({turn: {run: response}})")
        if isinstance(inner, dict) and "text" in inner and "relevance" in inner:
            return _known("ikat_nuggets_json", "iKAT nugget JSON")
    return None


# The same, from the head of a JSON object too big to be read whole.
_IKAT_HEADS = (
    (re.compile(r'^\{\s*"[^"]+"\s*:\s*\{\s*"\[\d+\]"\s*:\s*\{'), "ikat_nuggets_json", "iKAT nugget JSON"),
    (
        re.compile(r'^\{\s*"[^"]+"\s*:\s*\{\s*"[^"]+"\s*:\s*"'),
        "ikat_responses_json",
        "iKAT responses JSON ({turn: {run: response}})",
    ),
)


def _json_object(obj: dict[str, Any]) -> Sniffed:
    found = _response_level(obj)
    if found is not None:
        return found
    values = list(obj.values())[:5]
    if values and all(isinstance(v, list) and all(isinstance(x, str) and "-" in x for x in v) for v in values):
        return _unknown(
            "a CAsT 2022 turn ids file (topic → the numbers of its User turns, such as '1-1'; the turns come with the "
            "tree or flattened topics file)"
        )
    if not obj:
        return _unknown("an empty JSON object")
    return _unknown(f"a JSON object with keys {_keys(obj)}")


def _first_json_value(text: str, start: int) -> tuple[bool, Any]:
    try:
        value, _end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return False, None
    return True, value


def _json(text: str, complete: bool) -> Sniffed | None:
    if text.startswith("["):
        if complete:
            try:
                data = json.loads(text)
            except ValueError:
                return _known("cast_topics_json", "a JSON file")  # the parser names the bad line
            if not isinstance(data, list) or not data:
                return _unknown("an empty JSON list")
            return _topics_list(data[0])
        start = len(text) - len(text[1:].lstrip())
        ok, first = _first_json_value(text, start)
        if ok:
            return _topics_list(first)
        if re.search(r'"(participant|parent)"\s*:', text):
            return _known("cast2022_tree_json", "a CAsT 2022 tree topics file (turns with 'participant'/'parent')")
        if re.search(r'"ptkb"\s*:', text):
            return _known("ikat_topics_json", "an iKAT topics file (topics with a 'ptkb')")
        return _known("cast_topics_json", "a JSON file")
    lines = _sample_lines(text, complete)
    objects = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    # JSON Lines: every line an object, or (a file with bad lines) at least half of them.
    if objects and (len(objects) == len(lines) or 2 * len(objects) >= len(lines) > 1):
        return _jsonl(objects)
    ok, value = _first_json_value(text, 0)
    if ok and isinstance(value, dict):
        return _json_object(value)
    for pattern, name, looks in _IKAT_HEADS:
        if pattern.match(text):
            return _known(name, looks)
    if re.search(r'"run_name"\s*:', text) and re.search(r'"turns"\s*:', text):
        return _known("ikat_responses_json", "an iKAT run with responses (run_name, turns)")
    return None


def _jsonl(objects: list[dict[str, Any]]) -> Sniffed:
    found = _response_level(objects[0])
    if found is not None:
        return found
    if any(set(IKAT_KEYS) <= set(o) for o in objects):
        return _known("passages_jsonl", "an iKAT passage texts JSONL file (doc_id, passage_id, passage_text)")
    # One object with an id and a text is enough: the other lines then get the passage parser's own errors.
    if any(any(k in o for k in ID_KEYS) and any(k in o for k in TEXT_KEYS) for o in objects):
        return _known("passages_jsonl", "passages JSONL")
    first = objects[0]
    if len(objects) == 1:
        return _json_object(first)
    return _unknown(f"JSON Lines of objects with keys {_keys(first)}")


# ---------------------------------------------------------------- line formats (TSV, qrels, runs, CSV)


def _sample_lines(text: str, complete: bool) -> list[str]:
    lines = text.splitlines()
    if not complete and lines:
        lines = lines[:-1]  # cut in the middle
    return [line for line in lines if line.strip()][:SAMPLE_LINES]


_TURN_ID = re.compile(r"^\d+_\d+(-\d+)?$")  # as ``parsing.TURN_ID``
_INT = re.compile(r"^-?\d+$")
_MEASURE = re.compile(r"^[A-Za-z][\w.@-]*$")  # trec_eval measure names: map, P_5, ndcg_cut_3, iprec_at_recall_0.00
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$", re.I)


def _cols(line: str) -> list[str]:
    return line.rstrip("\t").split("\t")


def _columns(line: str, n: int) -> list[str] | None:
    """The line's ``n`` whitespace-separated columns; None when it has another number, or tabs elsewhere."""
    cols = line.split()
    if len(cols) != n or ("\t" in line and len(_cols(line)) != n):
        return None
    return cols


def _run_line(line: str) -> bool:
    c = _columns(line, 6)
    return c is not None and c[1] in ("Q0", "q0", "0") and bool(_INT.match(c[3]) and _NUMBER.match(c[4]))


def _qrels_line(line: str) -> bool:
    c = _columns(line, 4)
    return c is not None and (c[1] in ("Q0", "q0") or bool(_INT.match(c[1]))) and bool(_INT.match(c[3]))


def _trec_eval_line(line: str) -> bool:
    c = _columns(line, 3)
    return c is not None and bool(_MEASURE.match(c[0])) and (c[0] == "runid" or bool(_NUMBER.match(c[2])))


LinePredicate = Callable[[str], bool]
_LINE_FORMATS: dict[str, LinePredicate] = {
    "trec_run": _run_line,
    "trec_qrels": _qrels_line,
    "trec_eval_output": _trec_eval_line,
    "utterance_labels_tsv": lambda s: len(c := _cols(s)) == 3 and c[2].strip().upper() in ("SE", "FT", "PT"),
    "castur_tsv": lambda s: (
        len(c := _cols(s)) == 2
        and bool(_TURN_ID.match(c[0].strip()))
        and (c[1].strip().lower() == "x" or bool(_TURN_ID.match(c[1].strip())))
    ),
    "cast2019_resolved_tsv": lambda s: len(c := _cols(s)) == 2 and bool(_TURN_ID.match(c[0].strip())),
    # turn<TAB>run<TAB>response: ids without spaces, then a text (utterance labels end with SE/FT/PT instead).
    "responses_tsv": lambda s: (
        len(c := s.split("\t", 2)) == 3
        and bool(c[0].strip())
        and " " not in c[0].strip()
        and bool(c[1].strip())
        and " " not in c[1].strip()
        and " " in c[2].strip()
    ),
    "passages_tsv": lambda s: len(_cols(s)) == 2,  # exactly id<TAB>text: the passages import refuses more fields
}
_LOOKS = {
    "trec_run": "a TREC run (qid Q0 docid rank score tag)",
    "trec_qrels": "TREC qrels (qid iter docid grade)",
    "trec_eval_output": "trec_eval output (measure, qid or 'all', value)",
    "utterance_labels_tsv": "an utterance classes TSV (qid<TAB>utterance<TAB>SE|FT|PT)",
    "castur_tsv": "a CAsTUR TSV (current_turn<TAB>relevant_turn)",
    "cast2019_resolved_tsv": "a TSV of turn ids and texts (turn_id<TAB>text)",
    "passages_tsv": "a two-column TSV file (id<TAB>text)",
    "responses_tsv": "a responses TSV (turn<TAB>run<TAB>response)",
}
# A file that is mostly qrels or run lines is not a passages TSV just because its columns are tab-separated, nor is
# one whose ids are turn ids (rewrites or CAsTUR labels would be stored as passages named 31_2).
_SHADOWS = {
    "passages_tsv": (
        "trec_run",
        "trec_qrels",
        "trec_eval_output",
        "utterance_labels_tsv",
        "castur_tsv",
        "cast2019_resolved_tsv",
    )
}


def _csv(lines: list[str]) -> Sniffed | None:
    try:
        header = next(csv.reader(io.StringIO(lines[0])))
    except (csv.Error, StopIteration):
        return None
    names = [h.strip() for h in header]
    if [h.upper() for h in names] == ["TURN_ID", "MANUAL PARAPHRASE", "RAW PARAPHRASE"]:
        return _known("ecast_csv", "the ECAsT paraphrase CSV")
    if "Input.passage_id" in names and "Input.passage" in names:
        return _known("crowd_csv", "an MTurk batch CSV with passages")
    if all(c in names for c in ("qid", "docno", "score")):
        return _known("pyterrier_run_csv", "a PyTerrier results CSV (qid, docno, score, rank)")
    if all(c in names for c in ("qid", "docno", "label")):
        return _unknown("a PyTerrier qrels CSV (qid, docno, label)")
    if "HITId" in names or "AssignmentId" in names:
        return _unknown("an MTurk batch CSV without Input.passage_id and Input.passage columns")
    if any("\t" in line for line in lines) or len(header) < 3:
        return None
    if sum(line.count(",") >= 2 for line in lines) * 2 < len(lines):
        return None
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    return _unknown(f"a CSV file (header: {shown})")


def _id_scheme(lines: list[str]) -> tuple[str, tuple[str, ...]]:
    qids = [line.split()[0] for line in lines if line.split()]
    for name, (pattern, _note) in ID_SCHEMES.items():
        if qids and all(pattern.match(q) for q in qids):
            return name, tuple(dict.fromkeys(qids))[:5]
    return "", ()


def _wide_tsv(lines: list[str]) -> Sniffed | None:
    """A TSV file of three or more columns that no format reads (the iKAT 2023 GPT-4 labels, ``conv_id<TAB>turn_id
    <TAB>run_id<TAB>gpt4-label``): named with its header, so that no import is suggested for it."""
    widths = Counter(len(_cols(line)) for line in lines)
    width, count = widths.most_common(1)[0]
    if width < 3 or count * 2 < len(lines):
        return None
    header = [c.strip() for c in _cols(lines[0])]
    named = all(c and not _NUMBER.match(c) for c in header) and len(header) == width
    shown = f" (header: {', '.join(header[:6])}{', …' if len(header) > 6 else ''})" if named else ""
    return _unknown(f"a TSV file with {width} tab-separated columns{shown}")


def _lines(text: str, complete: bool) -> Sniffed | None:
    lines = _sample_lines(text, complete)
    if not lines:
        return None
    found = _csv(lines)
    if found is not None:
        return found
    if lines[0].strip().lower().split("\t") == ["current_turn", "relevant_turn"]:
        return _known("castur_tsv", "a CAsTUR TSV")
    hits = {name: sum(1 for line in lines if test(line)) for name, test in _LINE_FORMATS.items()}
    matched = [name for name, n in hits.items() if n * 2 >= len(lines)]
    matched = [m for m in matched if not any(s in matched for s in _SHADOWS.get(m, ()))]
    if not matched:
        return _wide_tsv(lines)
    best = max(matched, key=lambda m: hits[m])
    formats = frozenset(m for m in matched if m in READABLE)
    looks = _LOOKS[best]
    if best == "passages_tsv":
        widths = [len(_cols(line)) for line in lines]
        width = max(set(widths), key=widths.count)
        looks = looks if width == 2 else f"a TSV file with {width} tab-separated columns"
    if best in ("trec_qrels", "trec_run"):
        scheme, qids = _id_scheme(lines)
        docids = [cols[2] for cols in map(str.split, lines) if len(cols) > 2]
        # Qrels over statement numbers (iKAT 2024 turn ids look like CAsT's, so the numbers alone tell).
        ptkb = best == "trec_qrels" and all(re.match(r"^\d{1,3}$", d) for d in docids)
        if ptkb:
            formats = formats | {"ikat_ptkb_qrels"}
        if scheme == "ikat" and ptkb:
            looks = "an iKAT PTKB relevance file (turn, 0, statement number, 0|1)"
        elif scheme:
            looks = f"{looks} with {'CAsT 2022' if scheme == 'cast2022' else 'iKAT'} turn ids such as {qids[0]}"
        return Sniffed(formats, looks, id_scheme=scheme, qids=qids)
    return Sniffed(formats, looks)


# ---------------------------------------------------------------- sniffing


def sniff(head: Head | None) -> Sniffed | None:
    """What the file whose head this is looks like; None when it looks like nothing known (the parser decides)."""
    if head is None:
        return None
    data = head.data
    if head.complete and not data.strip():
        return _unknown("an empty file", lead="The file is empty")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _unknown("a UTF-16 text file", lead="This is a UTF-16 text file: re-save it as UTF-8")
    binary = _binary(data)
    if binary is not None:
        where = " inside a gzip file" if head.gzipped else ""
        return _unknown(f"{binary}{where}")
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    if not text:
        return None
    if text.startswith("<"):
        return _xml(text)
    if text.startswith(("[", "{")):
        return _json(text, head.complete)
    return _lines(text, head.complete)


def sniff_text(text: str) -> Sniffed | None:
    """``sniff`` of a file already read (a writer choosing among the formats its kind reads)."""
    data = text[:HEAD_BYTES].encode("utf-8")[:HEAD_BYTES]
    return sniff(Head(data, complete=len(text) <= HEAD_BYTES and len(data) < HEAD_BYTES))


def sniff_path(path: Path) -> Sniffed | None:
    """``sniff`` of a file on disk, reading its head only."""
    return sniff(read_head_of(path))


def refusal(
    sniffed: Sniffed,
    *,
    kind_label: str,
    reads: list[str],
    read_by: Sequence[str] = (),
    unknown_ids_in: str = "",
    create_turns: bool = False,
) -> str:
    """The one-sentence message for a file the kind cannot read: what it looks like and what the kind reads.

    ``read_by`` labels the kinds that do read it; ``unknown_ids_in`` names where no turn has the file's ids (a qrels
    or run file of a collection whose topics ecast cannot import), and ``create_turns`` whether the kind could
    make those turns.
    """
    readable = " or ".join(READABLE.get(r, r) for r in reads)
    tail = f"the “{kind_label}” import reads {readable}."
    if sniffed.lead:
        return f"{sniffed.lead}; {tail}"
    opening = f"This looks like {sniffed.looks}"
    if unknown_ids_in:
        note = ID_SCHEMES[sniffed.id_scheme][1] if sniffed.id_scheme in ID_SCHEMES else "its topics are not imported"
        adhoc = ", or of any ids with the option create_turns=true (each id a single-turn conversation)"
        return (
            f"{opening}, and no turn has such an id in {unknown_ids_in} ({note}); the “{kind_label}” import reads "
            f"{readable} of turns already imported{adhoc if create_turns else ''}."
        )
    if read_by:
        other = " or ".join(f"“{label}”" for label in read_by)
        return f"{opening}, which the {other} import reads; {tail}"
    return f"{opening}, which ecast cannot import; {tail}"
