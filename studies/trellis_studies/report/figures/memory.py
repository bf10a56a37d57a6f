# SPDX-License-Identifier: Apache-2.0
"""Peak resident memory (peak_rss_bytes of the last train or stop record) per model and
per-rank batch, repetitions averaged; the peak GPU memory beside it where the run had a GPU."""
from collections import defaultdict

from ..figure import Figure, Skipped
from .common import averaged

NAME = "memory"
MIB = 1 << 20


def build(runs):
    rss, gpu = defaultdict(list), defaultdict(list)
    for run in runs:
        if run.trains and run.peak_rss_bytes is not None:
            key = (str(run.value("model", "?")), run.batch_per_rank, str(run.value("precision") or "fp32"),
                   str(run.value("device") or "cpu"))
            rss[key].append(float(run.peak_rss_bytes))
            if run.totals and "peak_gpu_memory_mib" in run.totals:
                gpu[key].append(float(run.totals["peak_gpu_memory_mib"]))
    if not rss:
        return Skipped(NAME, "peak_rss_bytes (trellis-train's last train or stop record)")
    rss_points, gpu_points = averaged(rss), averaged(gpu)
    keys = sorted(rss_points)
    rows = [[m, b, p, d, rss_points[k][1], rss_points[k][0], rss_points[k][0] / MIB,
             gpu_points[k][0] if k in gpu_points else None] for k in keys for (m, b, p, d) in [k]]
    columns = ["model", "batch_per_rank", "precision", "device", "runs", "peak_rss_bytes", "peak_rss_mib",
               "peak_gpu_memory_mib"]

    def draw(figure):
        axes = figure.subplots()
        labels = [f"{m}\nb{b} {p} {d}" for (m, b, p, d) in keys]
        width = 0.4 if gpu_points else 0.8
        axes.bar([i for i in range(len(keys))], [rss_points[k][0] / MIB for k in keys], width, label="peak RSS")
        if gpu_points:
            axes.bar([i + width for i in range(len(keys))], [gpu_points.get(k, (0, 0))[0] for k in keys], width,
                     label="peak GPU memory")
            axes.legend(fontsize="x-small")
        axes.set_xticks([i + (width / 2 if gpu_points else 0) for i in range(len(keys))], labels, fontsize="small")
        axes.set(ylabel="MiB")
        axes.grid(True, axis="y", alpha=0.3)

    return Figure(NAME, "peak memory per model and batch", columns, rows, draw,
                  size=(max(6.0, 1.2 * len(keys) + 2), 4.5))
