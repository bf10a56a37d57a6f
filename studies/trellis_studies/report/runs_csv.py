# SPDX-License-Identifier: Apache-2.0
"""runs.csv: one row per run, the run record's fields (binding flattened to binding.NAME) and
total_images_per_sec exactly as the last train record wrote it."""
import csv

from .jsonl import json_text


def run_fields(run):
    """The run record's fields as runs.csv has them; a benchmark-only run gives its
    trellis-bench run record."""
    record = run.record or (run.bench_runs[0] if run.bench_runs else {})
    fields = {}
    for name, value in record.items():
        if name == "binding" and isinstance(value, dict):
            for variable, setting in value.items():
                fields[f"binding.{variable}"] = setting
        else:
            fields[name] = value
    return fields


def write_runs_csv(path, runs):
    rows = [run_fields(run) for run in runs]
    names = sorted({name for row in rows for name in row} - {"total_images_per_sec"})
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["run", "folder", "total_images_per_sec"] + names)
        for run, row in zip(runs, rows):
            total = run.totals.get("total_images_per_sec") if run.totals else None
            writer.writerow([run.name, run.folder, "" if total is None else json_text(total)] +
                            ["" if row.get(name) is None else json_text(row[name]) for name in names])
