# SPDX-License-Identifier: Apache-2.0
"""Reading JSON-lines files that a run may have left half-written: trellis-train's metrics.jsonl,
trellis-bench's bench.jsonl and --json output. The one reader of them, for the report, the
predictor, the campaign's status, the benchmarks, the GPU check and the tests.

A run killed with SIGKILL leaves a last line cut short; a run resumed after that starts on a
fresh line, so the cut line then sits just before the resumed segment's `run` record. Both are
dropped with a note. Any other line that is not JSON makes the file unreadable.
"""
import json


class TextFloat(float):
    """A float that remembers how the JSON text wrote it, so that runs.csv copies the value
    exactly as the run recorded it instead of Python's rounding of it."""

    def __new__(cls, text):
        number = super().__new__(cls, text)
        number.text = text
        return number


class UnreadableRun(Exception):
    """A run whose files cannot be read; the message names the file and what was wrong."""


def json_text(value):
    """The JSON text of a value, floats as the run wrote them."""
    if isinstance(value, TextFloat):
        return value.text
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse(text):
    return json.loads(text, parse_float=TextFloat)


def read_jsonl(path):
    """The records of a JSON-lines file and the notes about lines that were dropped."""
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            lines = stream.read().split("\n")
    except OSError as error:
        raise UnreadableRun(f"{path}: cannot read: {error.strerror}") from error
    records, notes = [], []
    pending_cut = None  # (line number, text) of a line that did not parse
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = parse(line)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except ValueError:
            if pending_cut:
                break
            pending_cut = number
            continue
        if pending_cut:
            if record.get("kind") != "run":
                break
            notes.append(f"{path}:{pending_cut}: a line cut short before a resumed segment (dropped)")
            pending_cut = None
        records.append(record)
    else:
        if pending_cut:
            notes.append(f"{path}:{pending_cut}: the last line is cut short (a killed run; dropped)")
        return records, notes
    raise UnreadableRun(f"{path}:{pending_cut}: not a JSON object (only a last line cut short by a killed run, "
                        "or one followed by a resumed run's `run` record, is accepted)")


def records_of(path, kind=None):
    """The records of PATH, only those of KIND ("train", "eval", "run", ...) where it is
    given; a line cut short by a kill is dropped as read_jsonl drops it."""
    records, _notes = read_jsonl(path)
    return [record for record in records if kind is None or record.get("kind") == kind]
