"""Reading the JSON-lines files that trellis-train and trellis-bench write, as a killed run
leaves them: a last line cut short is dropped, a broken line elsewhere is an error."""

import json


class InputError(Exception):
    """A file the predictor was given cannot be used; the message names it and says why."""


def read_records(path):
    """The JSON objects of PATH, one per line, in order."""
    try:
        with open(path, encoding="utf-8") as stream:
            lines = stream.read().split("\n")
    except OSError as error:
        raise InputError(f"{path}: cannot read it ({error.strerror})") from None
    while lines and not lines[-1].strip():
        lines.pop()
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):
                break  # the line a kill -9 cut short
            raise InputError(f"{path}:{number}: not a JSON object: {line[:60]!r}") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{number}: not a JSON object: {line[:60]!r}")
        records.append(record)
    return records
