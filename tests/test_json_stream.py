"""The streaming JSON array reader gives exactly what ``json.loads`` gives, whatever the
chunk boundaries, and refuses what the bounded reader refuses, with the line; a Label
Studio export is read in memory that does not grow with the file."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections import Counter

import pytest

from concord.importers import json_stream
from concord.importers.safe_load import LoadError
from tests.helpers import ROOT


def _items(text: str | bytes, chunk: int, limit: int = 1 << 30) -> list:
    data = text.encode("utf-8") if isinstance(text, str) else text
    old = json_stream.CHUNK_BYTES
    json_stream.CHUNK_BYTES = chunk
    try:
        return [v for _, v in json_stream.array_items(io.BytesIO(data), limit, "task")]
    finally:
        json_stream.CHUNK_BYTES = old


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([True, False, None])
    if kind == 1:
        return rng.randint(-10**12, 10**12)
    if kind == 2:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-20, 20)
    if kind in (3, 4):
        return "".join(rng.choice('ab é"\\\n\t\u2028\U0001f600/') for _ in range(rng.randrange(8)))
    if kind in (5, 6):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("seed", range(6))
def test_any_array_at_any_chunk_size_reads_as_json_loads_reads_it(seed):
    rng = random.Random(seed)
    doc = [_random_value(rng) for _ in range(30)]
    for text in (json.dumps(doc), json.dumps(doc, indent=2, ensure_ascii=False),
                 "\ufeff" + json.dumps(doc, separators=(",", ":"))):
        expected = json.loads(text.removeprefix("\ufeff"))
        for chunk in (1, 2, 3, 7, 64, 1 << 20):
            assert _items(text, chunk) == expected, (seed, chunk)


@pytest.mark.parametrize("text", ["[]", " [ ] \n", "[1]", "[1,2, 34567]",
                                  '["a\\u00e9\\ud83d\\ude00"]', "[-0.5e-3 ,true,false,null]"])
def test_small_documents(text):
    for chunk in (1, 2, 5, 100):
        assert _items(text, chunk) == json.loads(text)


@pytest.mark.parametrize(("text", "message", "line"), [
    ('{"a": 1}', "expected a JSON array, got an object", None),
    ('"x"', "expected a JSON array, got a string", None),
    ("12", "expected a JSON array, got a number", None),
    ("", "malformed JSON: Expecting value", 1),
    ("[1, 2", "malformed JSON", 1),
    ("[1 2]", "Expecting ',' delimiter", 1),
    ("[1,\n2]\nx", "Extra data", 3),
    ('[1,\n{"a": 1, "a": 2}]', "key 'a' twice in one object", 2),
    ("[\n\n" + "[" * 70 + "]" * 70 + "]", "nested more than 64 levels", 3),
    ("[" + "[" * 5000 + "]" * 5000 + "]", "nested more than 64 levels", 1),
    ("[1, " + "9" * 5000 + "]", "more than 4,300 digits", 1),
    ('[{"a": "x\u0001"}]', "Invalid control character", 1),
    ('[{"a": tru}]', "Expecting value", 1),
])
def test_what_json_refuses_is_refused_with_its_line(text, message, line):
    for chunk in (1, 3, 1 << 20):
        with pytest.raises(LoadError, match=message) as err:
            _items(text, chunk)
        assert err.value.line == line


def test_the_line_and_column_of_an_error_far_into_the_file():
    text = "[\n" + ",\n".join(['{"a": 1}'] * 5000) + ',\n{"a": 1,, "b": 2}\n]'
    with pytest.raises(LoadError) as err:
        _items(text, 4096)
    assert err.value.line == 5002
    assert "(column 9)" in err.value.message


def test_invalid_utf8_names_the_offset():
    data = b'[{"a": "ok"}, {"a": "\xff"}]'
    with pytest.raises(LoadError, match=r"not UTF-8 text \(byte 0xff at offset 21\)"):
        _items(data, 4)


def test_an_element_over_the_bound_and_a_file_over_the_limit(monkeypatch):
    monkeypatch.setattr(json_stream, "MAX_ITEM_BYTES", 1000)
    with pytest.raises(LoadError, match="task 1 is longer than"):
        _items(json.dumps([{"a": 1}, {"b": "x" * 5000}, {"c": 2}]), 64)
    with pytest.raises(LoadError, match="file larger than the limit"):
        _items(json.dumps([1] * 1000), 64, limit=500)


# The peak memory of reading a Label Studio export, in a process of its own: every task
# carries 3,000 empty objects (the most memory per byte of JSON: parsed whole, 20 MiB took
# about 330 MiB). Read a task at a time, it stays within a few MiB of the floor.
_CHILD = """
import json, resource, sys
from collections import Counter
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from concord.errors import ProblemLog
from concord.importers import label_studio
path = Path(sys.argv[2])
if sys.argv[3] == "read":
    log, rows = ProblemLog(), 0
    for chunk in label_studio.read_chunks(path, log, skipped=Counter()):
        rows += len(chunk[0])
    assert not log, log.shown
    print(rows)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""
PEAK_ABOVE_FLOOR_MIB = 64


def _peak(path, mode: str) -> list[int]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), str(path), mode],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    return [int(x) for x in out.split()]


def test_reading_a_large_label_studio_export_takes_bounded_memory(tmp_path):
    task = {"id": 0, "data": {"prompt_id": "p0", "model": "m1", "sample": 0},
            "drafts": [{}] * 3000,
            "annotations": [{"completed_by": {"id": r, "email": f"r{r}"}, "lead_time": 2.5,
                             "result": [{"from_name": c, "to_name": "image",
                                         "type": "choices", "value": {"choices": ["1"]}}
                                        for c in ("SC", "PR")]} for r in range(3)]}
    line = json.dumps(task)
    path = tmp_path / "export.json"
    n = (20 << 20) // len(line) + 1
    path.write_text("[\n" + ",\n".join([line] * n) + "\n]", encoding="utf-8")
    [floor] = _peak(path, "floor")
    rows, peak = _peak(path, "read")
    assert rows == n * 6
    assert peak - floor < PEAK_ABOVE_FLOOR_MIB, (peak, floor)


def test_label_studio_counts_are_unchanged_by_streaming(tmp_path):
    from concord.errors import ProblemLog
    from concord.importers import label_studio

    tasks = [{"id": i, "data": {"prompt_id": f"p{i}", "model": "m"},
              "annotations": [{"completed_by": 1, "result": [
                  {"from_name": "SC", "type": "choices", "value": {"choices": ["1"]}},
                  {"from_name": "note", "type": "textarea", "value": {"text": ["x"]}}]}]}
             for i in range(50)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(tasks))
    log, skipped = ProblemLog(), Counter()
    chunks = list(label_studio.read_chunks(path, log, rows=7, skipped=skipped))
    assert not log
    assert sum(len(c[0]) for c in chunks) == 50
    assert skipped == Counter()  # text results are comments now, read apart
    assert [c[0][0] for c in chunks][:3] == [0, 7, 14]  # the task index is the row
