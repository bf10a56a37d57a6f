# SPDX-License-Identifier: Apache-2.0
"""The communication share of the step, per run: comm_seconds over the step time, and the
part of it the step waited for after the backward pass (comm_wait_seconds), averaged over the
steps of each segment but its first (which also sets up the connections) when the segment has
more than one. A step's time is the global batch over its images/sec."""
from statistics import mean

from ..figure import Figure, Skipped, legend_text
from .common import rank_word, setup_key

NAME = "comm-share"


def _shares(run):
    batch = run.value("global_batch")
    comm, wait = [], []
    for segment in run.segments:
        measured = [r for r in segment.train if "comm_seconds" in r and r.get("images_per_sec") and batch]
        for record in measured[1:] if len(measured) > 1 else measured:
            step_seconds = float(batch) / float(record["images_per_sec"])
            comm.append(float(record["comm_seconds"]) / step_seconds)
            if "comm_wait_seconds" in record:
                wait.append(float(record["comm_wait_seconds"]) / step_seconds)
    return comm, wait


def build(runs):
    rows, words = [], []
    for run in runs:
        if not run.trains:
            continue
        comm, wait = _shares(run)
        if comm:
            rows.append([run.name, str(run.value("model", "?")), run.strategy, str(run.value("transport") or "-"),
                         run.gpus, len(comm), mean(comm), mean(wait) if wait else None])
            words.append(rank_word([setup_key(run)], run.gpus))
    if not rows:
        return Skipped(NAME, "comm_seconds in their train records (trellis-train with several ranks)")
    columns = ["run", "model", "strategy", "transport", "gpus", "steps", "comm_share", "comm_wait_share"]

    def draw(figure):
        axes = figure.subplots()
        positions = range(len(rows))
        axes.barh(list(positions), [row[6] for row in rows], label="communication")
        axes.barh(list(positions), [row[7] or 0 for row in rows], label="waited for after backward")
        axes.set_yticks(list(positions), [legend_text(f"{row[0]} ({row[4]} {word})") for row, word in zip(rows, words)], fontsize="small")
        axes.invert_yaxis()
        axes.set(xlabel="share of the step time")
        axes.grid(True, axis="x", alpha=0.3)
        axes.legend(fontsize="x-small")

    return Figure(NAME, "communication share of the step", columns, rows, draw,
                  size=(8.5, max(3.0, 0.4 * len(rows) + 1.8)))
