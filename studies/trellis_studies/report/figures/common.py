# SPDX-License-Identifier: Apache-2.0
"""What several figures group runs by."""
from statistics import mean


def finished(runs):
    """Training runs that reached their end (their last train record has total_images_per_sec)."""
    return [run for run in runs if run.trains and run.totals is not None]


def images_per_sec(run):
    return float(run.totals["total_images_per_sec"])


def setup_key(run):
    """Runs that differ only in their ranks and the way they exchange gradients."""
    return (str(run.value("model", "?")), run.batch_per_rank, str(run.value("precision") or "fp32"),
            str(run.value("device") or "cpu"), run.value("image_size"))


def setup_label(key):
    model, batch, precision, device, _ = key
    return f"{model} b{batch} {precision} {device}"


def rank_word(setups, count=2):
    """What COUNT ranks that train are called on an axis and in notes: GPUs where every setup ran
    on one, ranks where none did (a CPU rank is no GPU), both words for a mix."""
    devices = {key[3] for key in setups}
    words = ("GPU", "GPUs") if devices == {"cuda"} else ("rank", "ranks") if "cuda" not in devices else \
        ("GPU or CPU rank", "GPUs or CPU ranks")
    return words[count != 1]


def transport_of(run):
    return str(run.value("transport") or "-")


def nodes_of(run):
    return run.value("nodes")


def averaged(groups):
    """{key: [values]} -> {key: (mean, count)}"""
    return {key: (mean(values), len(values)) for key, values in groups.items()}
