# SPDX-License-Identifier: Apache-2.0
"""Runs as the report sees them, read from a trellis-train --log-dir folder (metrics.jsonl),
a trellis-bench --log-dir folder (bench.jsonl) or a trellis-campaign folder (campaign.json and
runs/<key>/ with settings.json, log/ and bench/)."""
import json
import os

from .jsonl import UnreadableRun, parse, read_jsonl


class Segment:
    """The records one start of trellis-train wrote: the first, or one after a resume."""

    def __init__(self, number, run_record):
        self.number = number
        self.run_record = run_record
        self.train = []   # per-step train records
        self.evals = []
        self.started = run_record.get("time") if run_record else None


class Run:
    """One run: its name, where it came from, its settings and what it recorded."""

    def __init__(self, name, folder):
        self.name = name
        self.folder = folder
        self.settings = {}      # a campaign's settings.json; empty for a plain log folder
        self.record = None      # the (first) run record of metrics.jsonl
        self.segments = []
        self.totals = None      # the last train record with total_images_per_sec
        self.stop = None
        self.bench_runs = []    # trellis-bench's run records
        self.bench = []         # trellis-bench's results
        self.notes = []

    @property
    def trains(self):
        return self.record is not None

    def value(self, name, default=None):
        """A setting of the run: the run record's, else the campaign's settings."""
        if self.record and name in self.record:
            return self.record[name]
        return self.settings.get(name, default)

    @property
    def gpus(self):
        """The ranks that train: a parameter-server run's workers, else its ranks."""
        return int(self.value("workers") or self.value("ranks") or 1)

    @property
    def strategy(self):
        words = self.value("strategy") or "single process"
        return "allreduce" if words == "allreduce" else "ps" if words == "ps" else str(words)

    @property
    def batch_per_rank(self):
        if self.value("batch_size"):
            return int(self.value("batch_size"))
        batch = int(self.value("global_batch") or 0)
        accumulate = int(self.value("accumulate") or 1)
        workers = self.gpus
        return batch // (workers * accumulate) if workers and accumulate else batch

    @property
    def peak_rss_bytes(self):
        for record in (self.totals, self.stop):
            if record and "peak_rss_bytes" in record:
                return record["peak_rss_bytes"]
        return None

    def add_metrics(self, records):
        segment = None
        for record in records:
            kind = record.get("kind")
            if kind == "run":
                number = int(record.get("segment", len(self.segments) + 1))
                segment = Segment(number, record)
                self.segments.append(segment)
                if self.record is None:
                    self.record = record
                continue
            if segment is None:  # records without a run record before them: a cut file's tail
                segment = Segment(int(record.get("segment", 1)), None)
                self.segments.append(segment)
            if kind == "train" and "total_images_per_sec" in record:
                self.totals = record
            elif kind == "train":
                segment.train.append(record)
            elif kind == "eval":
                segment.evals.append(record)
            elif kind == "stop":
                self.stop = record

    def add_bench(self, records):
        for record in records:
            if record.get("kind") == "run":
                self.bench_runs.append(record)
            elif record.get("kind", "result") == "result" and "benchmark" in record:
                self.bench.append(record)


def _read_log_folder(run, folder, required):
    metrics = os.path.join(folder, "metrics.jsonl")
    bench = os.path.join(folder, "bench.jsonl")
    found = False
    for path, add in ((metrics, run.add_metrics), (bench, run.add_bench)):
        if os.path.isfile(path):
            records, notes = read_jsonl(path)
            add(records)
            run.notes.extend(notes)
            found = True
    if run.segments and run.record is None:
        raise UnreadableRun(f"{metrics}: no `run` record (is this a trellis-train metrics file?)")
    if not found and required:
        raise UnreadableRun(f"{folder}: neither metrics.jsonl (trellis-train --log-dir), bench.jsonl "
                            "(trellis-bench --log-dir) nor campaign.json (trellis-campaign)")
    return found


def _read_json_object(path, what):
    try:
        with open(path, encoding="utf-8") as stream:
            value = parse(stream.read())
    except OSError as error:
        raise UnreadableRun(f"{path}: cannot read: {error.strerror}") from error
    except ValueError as error:
        raise UnreadableRun(f"{path}: not JSON ({error})") from error
    if not isinstance(value, dict):
        raise UnreadableRun(f"{path}: not a JSON object ({what} is one)")
    return value


def _read_campaign(folder):
    path = os.path.join(folder, "campaign.json")
    campaign = _read_json_object(path, "a campaign")
    if campaign.get("kind") != "trellis-campaign" or not isinstance(campaign.get("runs"), list):
        raise UnreadableRun(f"{path}: not a trellis-campaign file (kind \"trellis-campaign\" and a runs list expected)")
    name = str(campaign.get("name") or os.path.basename(os.path.abspath(folder)))
    runs, notes = [], []
    for entry in campaign["runs"]:
        key = str(entry.get("key", "")) if isinstance(entry, dict) else ""
        if not key or os.sep in key or key in (".", ".."):
            raise UnreadableRun(f"{path}: a run without a usable key: {json.dumps(entry)[:80]}")
        run_folder = os.path.join(folder, "runs", key)
        run = Run(f"{name}/{key}", run_folder)
        settings_path = os.path.join(run_folder, "settings.json")
        if os.path.isfile(settings_path):
            run.settings = _read_json_object(settings_path, "a run's settings")
        elif isinstance(entry.get("settings"), dict):
            run.settings = entry["settings"]
        for sub in ("log", "bench"):
            if os.path.isdir(os.path.join(run_folder, sub)):
                _read_log_folder(run, os.path.join(run_folder, sub), required=False)
        if run.trains or run.bench:
            runs.append(run)
        else:
            notes.append(f"{run_folder}: no train or benchmark records yet (not run, or failed early): left out")
    return runs, notes


def read_runs(argument):
    """The runs of one RUN argument, and notes about what was left out."""
    folder = argument
    if os.path.isfile(argument) and os.path.basename(argument) in ("metrics.jsonl", "bench.jsonl"):
        folder = os.path.dirname(argument) or "."
    if not os.path.isdir(folder):
        raise UnreadableRun(f"{argument}: no such folder")
    if os.path.isfile(os.path.join(folder, "campaign.json")):
        return _read_campaign(folder)
    run = Run(os.path.normpath(folder), folder)
    _read_log_folder(run, folder, required=True)
    if not run.trains and not run.bench:
        raise UnreadableRun(f"{folder}: no training or benchmark records")
    return [run], []
