# SPDX-License-Identifier: Apache-2.0
"""Parameter server against allreduce, per model: images/sec at each number of ranks that train
(GPUs on a GPU run), bars side by side (a parameter-server run is labelled with its number of
servers)."""
from collections import defaultdict

from ..figure import Figure, Skipped, legend_text
from .common import averaged, finished, images_per_sec, rank_word, setup_key, setup_label, transport_of

NAME = "ps-vs-allreduce"


def _variant(run):
    if run.strategy == "ps":
        servers = run.value("servers") or run.value("ps_servers")
        return f"ps {servers} server{'' if str(servers) == '1' else 's'}" if servers else "ps"
    return "allreduce"


def build(runs):
    runs = [run for run in finished(runs) if run.strategy in ("ps", "allreduce")]
    setups = defaultdict(set)
    for run in runs:
        setups[setup_key(run)].add(run.strategy)
    compared = {setup for setup, strategies in setups.items() if strategies == {"ps", "allreduce"}}
    if not compared:
        return Skipped(NAME, "both strategies for one model (parameter-server and allreduce runs of the same model and batch)")
    samples = defaultdict(list)
    for run in runs:
        if setup_key(run) in compared:
            samples[(setup_key(run), run.gpus, _variant(run), transport_of(run))].append(images_per_sec(run))
    points = averaged(samples)
    allreduce = {(s, g, t): v for (s, g, variant, t), (v, _) in points.items() if variant == "allreduce"}
    rows = []
    for (setup, gpus, variant, transport), (value, count) in sorted(points.items(), key=str):
        reference = allreduce.get((setup, gpus, transport))
        rows.append([setup[0], setup[1], setup[2], setup[3], gpus, variant, transport, count, value,
                     value / reference if reference else None])
    columns = ["model", "batch_per_rank", "precision", "device", "gpus", "strategy", "transport", "runs",
               "images_per_sec", "over_allreduce"]
    ordered = sorted(compared, key=str)

    def draw(figure):
        panels = figure.subplots(1, len(ordered), squeeze=False)[0]
        for axes, setup in zip(panels, ordered):
            mine = {key: value for key, value in points.items() if key[0] == setup}
            gpus = sorted({key[1] for key in mine})
            variants = sorted({(key[2], key[3]) for key in mine})
            width = 0.8 / len(variants)
            for number, (variant, transport) in enumerate(variants):
                xs = [i + number * width for i in range(len(gpus))]
                ys = [mine.get((setup, g, variant, transport), (0, 0))[0] for g in gpus]
                axes.bar(xs, ys, width, label=legend_text(f"{variant} {transport}".replace(" -", "")))
            axes.set_xticks([i + 0.4 - width / 2 for i in range(len(gpus))], [str(g) for g in gpus])
            axes.set(xlabel=rank_word([setup]), ylabel="images/sec", title=legend_text(setup_label(setup)))
            axes.grid(True, axis="y", alpha=0.3)
            axes.legend(fontsize="x-small")

    return Figure(NAME, "parameter server against allreduce", columns, rows, draw,
                  size=(max(5.5, 4.5 * len(ordered)), 4.5))
