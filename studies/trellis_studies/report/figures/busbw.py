# SPDX-License-Identifier: Apache-2.0
"""trellis-bench's allreduce bus bandwidth against message size, one line per transport,
algorithm and number of ranks (repetitions averaged)."""
from collections import defaultdict

from ..figure import Figure, Skipped, legend_text
from .common import averaged

NAME = "busbw"


def build(runs):
    samples = defaultdict(list)
    for run in runs:
        for result in run.bench:
            if result.get("benchmark") == "allreduce" and "busbw_gbs" in result and "bytes" in result:
                key = (str(result.get("transport", "-")), str(result.get("algorithm", "-")),
                       int(result.get("ranks", 0)), int(result["bytes"]))
                samples[key].append(float(result["busbw_gbs"]))
    if not samples:
        return Skipped(NAME, "allreduce results of trellis-bench (bench.jsonl or --json output)")
    points = averaged(samples)
    rows = [[t, a, r, b, count, value] for (t, a, r, b), (value, count) in sorted(points.items())]
    columns = ["transport", "algorithm", "ranks", "bytes", "results", "busbw_gbs"]
    lines = sorted({key[:3] for key in points})

    def draw(figure):
        axes = figure.subplots()
        for line in lines:
            sizes = sorted(key[3] for key in points if key[:3] == line)
            axes.plot(sizes, [points[line + (size,)][0] for size in sizes], marker="o",
                      label=legend_text(f"{line[0]} {line[1]} {line[2]} ranks"))
        axes.set_xscale("log", base=2)
        axes.set(xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="x-small")

    return Figure(NAME, "allreduce bus bandwidth", columns, rows, draw)
