# SPDX-License-Identifier: Apache-2.0
"""Images/sec and scaling efficiency against the ranks that train (GPUs on a GPU run), one line
per model, strategy and transport. Efficiency is against the smallest run present of the same
model, per-rank batch, precision and device: images/sec / (its images/sec per rank x ranks). A
single-process run is the 1-rank point of every line of its setup."""
from collections import defaultdict

from ..figure import Figure, Skipped, integer_ticks, legend_text
from .common import averaged, finished, images_per_sec, nodes_of, rank_word, setup_key, setup_label, transport_of

NAME = "scaling"


def build(runs):
    runs = finished(runs)
    if not runs:
        return Skipped(NAME, "total_images_per_sec (finished trellis-train runs)")
    samples = defaultdict(list)  # (setup, strategy, transport, gpus) -> images/sec of each repetition
    nodes = {}
    for run in runs:
        key = (setup_key(run), run.strategy, transport_of(run) if run.gpus > 1 else "-", run.gpus)
        samples[key].append(images_per_sec(run))
        nodes.setdefault(key, nodes_of(run))
    points = averaged(samples)
    baseline = {}  # setup -> (gpus, images/sec per GPU)
    for (setup, _, _, gpus), (value, _) in sorted(points.items(), key=lambda item: item[0][3]):
        if setup not in baseline or gpus < baseline[setup][0]:
            baseline[setup] = (gpus, value / gpus)
    lines = defaultdict(dict)  # (setup, strategy, transport) -> {gpus: (images/sec, runs)}
    for (setup, strategy, transport, gpus), point in points.items():
        lines[(setup, strategy, transport)][gpus] = point
    # A single-process run joins each multi-rank line of its setup as that line's first point.
    for (setup, strategy, transport) in [line for line in lines if line[1] == "single process"]:
        others = [line for line in lines if line[0] == setup and line[1] != "single process"]
        for other in others:
            for gpus, point in lines[(setup, strategy, transport)].items():
                lines[other].setdefault(gpus, point)
        if others:
            del lines[(setup, strategy, transport)]
    rows = []
    for (setup, strategy, transport) in sorted(lines, key=str):
        base_gpus, per_gpu = baseline[setup]
        for gpus in sorted(lines[(setup, strategy, transport)]):
            value, count = lines[(setup, strategy, transport)][gpus]
            ideal = per_gpu * gpus
            rows.append([setup[0], setup[1], setup[2], setup[3], strategy, transport, gpus,
                         nodes.get((setup, strategy, transport, gpus)), count, value, ideal, value / ideal, base_gpus])
    columns = ["model", "batch_per_rank", "precision", "device", "strategy", "transport", "gpus", "nodes", "runs",
               "images_per_sec", "ideal_images_per_sec", "efficiency", "baseline_gpus"]

    ranks = rank_word(baseline)

    def draw(figure):
        speed, efficiency = figure.subplots(1, 2)
        for (setup, strategy, transport) in sorted(lines, key=str):
            line = lines[(setup, strategy, transport)]
            gpus = sorted(line)
            label = legend_text(f"{setup_label(setup)} {strategy} {transport}".replace(" -", ""))
            base_gpus, per_gpu = baseline[setup]
            speed.plot(gpus, [line[g][0] for g in gpus], marker="o", label=label)
            efficiency.plot(gpus, [line[g][0] / (per_gpu * g) for g in gpus], marker="o", label=label)
        for setup, (base_gpus, per_gpu) in baseline.items():
            top = max(key[3] for key in points if key[0] == setup)
            speed.plot([base_gpus, top], [per_gpu * base_gpus, per_gpu * top], linestyle="--", color="grey",
                       label=legend_text(f"ideal ({setup_label(setup)})"))
        efficiency.axhline(1.0, linestyle="--", color="grey", label="ideal")
        speed.set(xlabel=f"{ranks} that train", ylabel="images/sec", title="throughput")
        efficiency.set(xlabel=f"{ranks} that train", ylabel="scaling efficiency", title="efficiency",
                       ylim=(0, max(1.1, max(row[11] for row in rows) * 1.05)))
        for axes in (speed, efficiency):
            if max(key[3] for key in points) > 2:
                axes.set_xscale("log", base=2)
            integer_ticks(axes, [key[3] for key in points])
            axes.grid(True, alpha=0.3)
        speed.legend(fontsize="x-small")

    notes = [f"efficiency against the run on {gpus} {rank_word([setup], gpus)} of {setup_label(setup)}"
             for setup, (gpus, _) in sorted(baseline.items(), key=str)]
    return Figure(NAME, "images/sec and scaling efficiency", columns, rows, draw, notes, size=(11, 4.5))
