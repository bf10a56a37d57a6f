#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The accuracy gate's verdict: trellis-train's final top-1 on Fashion-MNIST's test images against
PyTorch's on the same recipe (tests/train/fashion_mnist_reference.tsv, one row per seed).

    accuracy_verdict.py TABLE NAME=METRICS[,METRICS...] ...

Each NAME is a group of trellis runs (one metrics.jsonl each, one seed each). With PyTorch's n
seeds of mean m and standard deviation s, a group of k runs passes when
  - its mean top-1 is at least m - 3 s sqrt(1/k + 1/n): three standard errors of the difference
    of two means whose seeds spread as PyTorch's do, so that luck fails a sound tree about once
    in a thousand runs of the gate while a change that costs a point of accuracy fails it; and
  - no run is below m - 5 s: a seed that collapses fails the gate whatever the others reached.
Prints a line per run and per group; exits 1 when a group fails, 2 when an input is unusable."""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "studies"))
from trellis_studies.report.jsonl import UnreadableRun, read_jsonl  # noqa: E402


def reference(path):
    """PyTorch's top-1 per seed, and the table's first comment line (its version and date)."""
    with open(path) as table:
        lines = table.read().splitlines()
    header = next(line for line in lines if not line.startswith("#"))
    columns = header.split("\t")
    rows = [dict(zip(columns, line.split("\t"))) for line in lines[lines.index(header) + 1:] if line.strip()]
    return [float(row["top1"]) for row in rows], lines[0].lstrip("# ")


def final_top1(path):
    records, _ = read_jsonl(path)
    evaluations = [r for r in records if r.get("kind") == "eval"]
    if not evaluations:
        raise UnreadableRun(f"{path}: no evaluation (the run stopped before its end?)")
    return float(evaluations[-1]["top1"])


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    peer, source = reference(argv[1])
    n = len(peer)
    if n < 3:
        print(f"{argv[1]}: {n} seeds; the spread needs at least 3", file=sys.stderr)
        return 2
    m, s = statistics.mean(peer), statistics.stdev(peer)
    collapse = m - 5 * s
    print(f"PyTorch: top-1 {m:.4f} +/- {s:.4f} over {n} seeds (min {min(peer):.4f}, max {max(peer):.4f}; {source})")
    failed = False
    for group in argv[2:]:
        name, _, paths = group.partition("=")
        try:
            ours = [final_top1(path) for path in paths.split(",")]
        except (UnreadableRun, OSError, KeyError, ValueError) as error:
            print(f"{name}: unusable: {error}", file=sys.stderr)
            return 2
        k = len(ours)
        floor = m - 3 * s * math.sqrt(1 / k + 1 / n)
        mean = statistics.mean(ours)
        collapsed = [f"{top1:.4f}" for top1 in ours if top1 < collapse]
        verdict = "FAIL" if mean < floor or collapsed else "pass"
        failed |= verdict == "FAIL"
        why = f"; collapsed below {collapse:.4f}: {', '.join(collapsed)}" if collapsed else ""
        print(f"{name}: top-1 {' '.join(f'{top1:.4f}' for top1 in ours)}, mean {mean:.4f} "
              f"(at least {floor:.4f}: PyTorch's mean less {m - floor:.4f}){why}: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
