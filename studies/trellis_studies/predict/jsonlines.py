# SPDX-License-Identifier: Apache-2.0
"""The predictor's inputs are the JSON-lines files trellis-train and trellis-bench write; they are
read as trellis-report reads them (report/jsonl.py: a line a kill -9 cut short is dropped, also
before a resumed segment), and a file that cannot be read is the predictor's InputError."""

from trellis_studies.report.jsonl import UnreadableRun, records_of


class InputError(Exception):
    """A file the predictor was given cannot be used; the message names it and says why."""


def read_records(path):
    """The JSON objects of PATH, one per line, in order."""
    try:
        return records_of(path)
    except UnreadableRun as error:
        raise InputError(str(error)) from None
