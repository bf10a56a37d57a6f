# SPDX-License-Identifier: Apache-2.0
"""The settings of one run: every key a study may set, its type, the values it accepts, and
its default. A run's settings always carry every key, defaults included, so that its key (a
hash of them) is the same however the study spelled them."""

import re

MODELS = re.compile(r"^[a-z][a-z0-9_]*$")
ALGORITHMS = ("auto", "ring", "halving-doubling", "hierarchical")


class StudyError(Exception):
    """A study that cannot be run: the message names the file, the key and the value."""


class Setting:
    def __init__(self, kind, default, accepted, check=None):
        self.kind = kind          # int, float, str or list (of strings)
        self.default = default
        self.accepted = accepted  # words for the error message
        self.check = check or (lambda value: True)


def _positive(value):
    return value >= 1


def _non_negative(value):
    return value >= 0


SETTINGS = {
    "model": Setting(str, "resnet50", "a trellis-train model name such as resnet50",
                     lambda v: bool(MODELS.match(v))),
    "image_size": Setting(int, 0, "0 (the model's own) or a positive size", _non_negative),
    "batch_size": Setting(int, 32, "a positive number of images per rank", _positive),
    "steps": Setting(int, 100, "a positive number of steps", _positive),
    "precision": Setting(str, "fp32", "fp32, bf16 or fp16", lambda v: v in ("fp32", "bf16", "fp16")),
    "data": Setting(str, "synthetic", "synthetic, a folder, tfrecord:GLOB or idx:DIR", lambda v: v != ""),
    "nodes": Setting(int, 1, "a positive number of nodes", _positive),
    "ranks_per_node": Setting(int, 1, "a positive number of ranks per node", _positive),
    "strategy": Setting(str, "allreduce", "allreduce, allreduce:ALGORITHM, ps or ps:SERVERS",
                        lambda v: v in ("allreduce", "ps")),
    "algorithm": Setting(str, "auto", ", ".join(ALGORITHMS), lambda v: v in ALGORITHMS + ("",)),
    "ps_servers": Setting(int, 1, "a positive number of parameter servers", _non_negative),
    "transport": Setting(str, "auto", "auto, tcp, verbs, shm or nccl",
                         lambda v: v in ("auto", "tcp", "verbs", "shm", "nccl")),
    "container": Setting(str, "", '"" (native) or an image for --trellis-image'),
    "threads": Setting(int, 0, "0 (trellis-train's default) or a positive number", _non_negative),
    "eval_every": Setting(int, 0, "0 (at the end only) or a positive number of steps", _non_negative),
    "target_accuracy": Setting(float, 0.0, "0 (none) or a top-1 accuracy between 0 and 1",
                               lambda v: 0 <= v <= 1),
    "benchmark": Setting(str, "", '"" (a training run), allreduce, p2p or ps (a trellis-bench run)',
                         lambda v: v in ("", "allreduce", "p2p", "ps")),
    "bench_sizes": Setting(str, "8,64K,1M,16M", "trellis-bench's --sizes list such as 8,64K,1M",
                           lambda v: bool(re.match(r"^[0-9]+[KMG]?(,[0-9]+[KMG]?)*$", v))),
    "extra_args": Setting(list, [], "a list of more trellis-train (or trellis-bench) arguments"),
}


def check_value(where, key, value):
    """Returns VALUE as the setting KEY's type, or raises StudyError naming WHERE and KEY."""
    setting = SETTINGS[key]
    if setting.kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if setting.kind is list:
        good = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if good:
            for item in value:
                refuse_newlines(where, key, item)
    else:
        good = isinstance(value, setting.kind) and not isinstance(value, bool)
        if good and setting.kind is str:
            refuse_newlines(where, key, value)
    if not good or not setting.check(value):
        raise StudyError(f"{where}: {key} = {value!r}: accepted: {setting.accepted}")
    return value


def refuse_newlines(where, key, value):
    # A newline would end a #SBATCH line or a comment of the script: refused everywhere.
    if "\n" in value or "\r" in value or "\0" in value:
        raise StudyError(f"{where}: {key} = {value!r}: newlines (and NUL) are not accepted in a study")


def split_strategy(where, value):
    """'allreduce', 'allreduce:ring', 'ps' or 'ps:2' as (strategy, algorithm or None,
    ps_servers or None)."""
    if not isinstance(value, str):
        raise StudyError(f"{where}: strategy = {value!r}: accepted: {SETTINGS['strategy'].accepted}")
    name, _, detail = value.partition(":")
    if name == "allreduce" and (detail == "" or detail in ALGORITHMS):
        return name, detail or None, None
    if name == "ps" and (detail == "" or (detail.isdigit() and int(detail) >= 1)):
        return name, None, int(detail) if detail else None
    raise StudyError(f"{where}: strategy = {value!r}: accepted: {SETTINGS['strategy'].accepted} "
                     f"(ALGORITHM: {', '.join(ALGORITHMS)})")
