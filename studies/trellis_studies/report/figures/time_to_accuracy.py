# SPDX-License-Identifier: Apache-2.0
"""Top-1 and top-5 accuracy against training time and against epochs. Training time is the
time carried across resumes (train_seconds) where the run recorded it; a run without it is
drawn one line per segment, each from its own start. Epochs come from the eval records (or from
the steps, the global batch and the run record's training-set size); where a run has neither,
the second panel is against steps for every run."""
from ..figure import Figure, Skipped, legend_text

NAME = "time-to-accuracy"
SET_SIZE_FIELDS = ("train_images", "training_set_size")


def _epochs(run, record):
    if "epoch" in record:
        return float(record["epoch"])
    size = next((run.value(field) for field in SET_SIZE_FIELDS if run.value(field)), None)
    if size and run.value("global_batch"):
        return float(record["step"]) * float(run.value("global_batch")) / float(size)
    return None


def _series(run, notes):
    """(label, segment, [(seconds, epochs, step, top1, top5)]) per line of the run."""
    carried = all("train_seconds" in record for segment in run.segments for record in segment.evals)
    if carried:
        points = [(float(r["train_seconds"]), _epochs(run, r), r.get("step"), r.get("top1"), r.get("top5"), s.number)
                  for s in run.segments for r in s.evals]
        return [(run.name, "", points)] if points else []
    notes.append(f"{run.name}: no train_seconds in its eval records: each segment is drawn from its own start")
    lines = []
    for segment in run.segments:
        if not segment.evals:
            continue
        start = segment.started if segment.started is not None else segment.evals[0].get("time", 0)
        points = [(float(r.get("time", start)) - float(start), _epochs(run, r), r.get("step"), r.get("top1"),
                   r.get("top5"), segment.number) for r in segment.evals]
        lines.append((f"{run.name} (segment {segment.number})", segment.number, points))
    return lines


def build(runs):
    notes = []
    lines = []
    for run in runs:
        if run.trains:
            lines.extend(_series(run, notes))
    if not lines:
        return Skipped(NAME, "eval records (trellis-train --eval-every or a final evaluation)")
    by_epochs = all(point[1] is not None for _, _, points in lines for point in points)
    if not by_epochs:
        notes.append("a run has no epochs in its eval records and no training-set size in its run record: "
                     "the second panel is against steps")
    rows = [[label, point[5], point[2], point[0], point[1], point[3], point[4]]
            for label, _, points in lines for point in points]
    columns = ["run", "segment", "step", "train_seconds", "epochs", "top1", "top5"]

    def draw(figure):
        by_time, by_progress = figure.subplots(1, 2, sharey=True)
        for number, (label, _, points) in enumerate(lines):
            colour = f"C{number % 10}"
            progress = [p[1] if by_epochs else p[2] for p in points]
            for axes, xs in ((by_time, [p[0] for p in points]), (by_progress, progress)):
                axes.plot(xs, [p[3] for p in points], marker="o", color=colour, label=legend_text(f"{label} top-1"))
                axes.plot(xs, [p[4] for p in points], marker="s", linestyle="--", color=colour,
                          label=legend_text(f"{label} top-5"))
        by_time.set(xlabel="training time (s)", ylabel="accuracy", title="against time")
        by_progress.set(xlabel="epochs" if by_epochs else "steps", title="against epochs" if by_epochs else "against steps")
        for axes in (by_time, by_progress):
            axes.grid(True, alpha=0.3)
        by_time.legend(fontsize="x-small")

    return Figure(NAME, "top-1 and top-5 accuracy", columns, rows, draw, notes, size=(11, 4.5))
