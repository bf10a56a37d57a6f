# SPDX-License-Identifier: Apache-2.0
"""What the predictor takes from trellis-train's --log-dir folders (metrics.jsonl): a rank's
step time, the gradient's size, the batch, and the overlap of communication with the backward
pass that a run of several ranks measured."""

import os
from dataclasses import dataclass

from trellis_studies.predict.jsonlines import InputError, read_records

# trellis-train leaves its first --warmup-batches steps (default 2) out of total images/sec;
# the run record does not say how many, so the same default.
WARMUP_STEPS = 2


def metrics_path(folder):
    path = os.path.join(folder, "metrics.jsonl")
    if not os.path.isfile(path):
        raise InputError(f"{folder}: no metrics.jsonl (give trellis-train's --log-dir folder)")
    return path


def run_and_steps(folder, records=None):
    """The run record and the train records of timed steps (after the warm-up)."""
    path = metrics_path(folder)
    records = read_records(path) if records is None else records
    run = next((r for r in records if r.get("kind") == "run"), None)
    if run is None:
        raise InputError(f"{path}: no run record (a line with \"kind\": \"run\")")
    steps = [r for r in records if r.get("kind") == "train" and isinstance(r.get("images_per_sec"), (int, float))
             and r["images_per_sec"] > 0]
    timed = [r for r in steps if r.get("step", 0) > WARMUP_STEPS] or steps[-1:]
    if not timed:
        raise InputError(f"{path}: no train record with images_per_sec (did the run train a step?)")
    return path, run, timed


def number(run, key, path):
    value = run.get(key)
    if not isinstance(value, (int, float)) or value <= 0:
        raise InputError(f"{path}: the run record has no {key} (found {value!r}), which the predictor needs")
    return value


@dataclass
class RankTiming:
    """One rank's training step as measured."""
    source: str
    step_seconds: float
    batch: int  # images per rank per step
    gradient_bytes: int
    model: str = ""


def rank_timing(folder):
    """Step time: global batch / the run's total images/sec (the trainer's own figure, after
    its own --warmup-batches), else, for a run cut short before its last step, the mean over
    the timed steps of global batch / images_per_sec; gradient bytes: the run record's
    gradient_bytes, else its parameters x 4 (float32)."""
    records = read_records(metrics_path(folder))
    path, run, timed = run_and_steps(folder, records)
    global_batch = number(run, "global_batch", path)
    workers = run.get("workers") or run.get("ranks") or 1
    totals = [r["total_images_per_sec"] for r in records if r.get("kind") == "train"
              and isinstance(r.get("total_images_per_sec"), (int, float)) and r["total_images_per_sec"] > 0]
    if totals:
        seconds = global_batch / totals[-1]
    else:
        seconds = sum(global_batch / r["images_per_sec"] for r in timed) / len(timed)
    if isinstance(run.get("gradient_bytes"), (int, float)) and run["gradient_bytes"] > 0:
        gradient = run["gradient_bytes"]
    else:
        gradient = number(run, "parameters", path) * 4
    batch = run.get("batch_size") or global_batch // workers
    return RankTiming(path, seconds, int(batch), int(gradient), str(run.get("model", "")))


def measured_overlap(folder):
    """(strategy family, share): the share of communication hidden behind the backward pass in
    a run of several ranks, 1 - (time the steps waited for it) / (time it took) over the timed
    steps, and whether the run used an allreduce or a parameter server."""
    path, run, timed = run_and_steps(folder)
    family = run.get("strategy")
    if family not in ("allreduce", "ps"):
        raise InputError(f"{path}: the run record's strategy is {family!r}; an overlap comes from a run of "
                         f"several ranks with strategy \"allreduce\" or \"ps\"")
    timed = [r for r in timed if isinstance(r.get("comm_seconds"), (int, float))
             and isinstance(r.get("comm_wait_seconds"), (int, float))]
    total = sum(r["comm_seconds"] for r in timed)
    if total <= 0:
        raise InputError(f"{path}: no train record with comm_seconds and comm_wait_seconds above 0 "
                         f"(a run of several ranks writes them)")
    waited = sum(r["comm_wait_seconds"] for r in timed)
    return family, min(1.0, max(0.0, 1 - waited / total))


def alone_step_seconds(folders):
    """N ranks trained alone at once (no communication, the cores shared as in the job): a
    synchronous step waits for the slowest, so the largest of their step times."""
    return max(rank_timing(folder).step_seconds for folder in folders)
