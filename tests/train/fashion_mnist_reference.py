#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the PyTorch side of the accuracy gate (tests/train/accuracy_gate_test.sh): PyTorch trains
the gate's recipe once per seed through tests/perf/pytorch_fashion_mnist.py (the same ResNet,
initialisation, optimizer, schedule, input and augmentation as trellis-train) and its final top-1
on the 10,000 test images goes into a table, with the PyTorch version, the date and the recipe,
which the gate reads back and runs on trellis. Run it again when the recipe or the peer changes:

    tests/train/fashion_mnist_reference.py [--seeds 1-10] [--out tests/train/fashion_mnist_reference.tsv]

Each seed takes about a minute on 2 cores; the whole runs are printed as they end."""
import argparse
import datetime
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "perf", "pytorch_fashion_mnist.py")
DATA = "/usr/share/datasets/fashion-mnist"

# The gate's recipe, as trellis-train's options, and the peer's spelling of each (None: the peer
# has it so already). One epoch of
# Fashion-MNIST's 60,000 images at batch 128 (468 steps), the learning rate decaying to 0 on a
# cosine: at a constant rate the last evaluation swings by several points from seed to seed.
RECIPE = [("--model", "resnet8", "--model"), ("--image-size", "28", None), ("--batch-size", "128", "--batch-size"),
          ("--lr", "0.2", "--lr"), ("--lr-schedule", "cosine", "--schedule"), ("--steps", "468", "--steps")]


def seeds(text):
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=seeds, default=seeds("1-10"), help="FIRST-LAST (default 1-10)")
    parser.add_argument("--out", default=os.path.join(HERE, "fashion_mnist_reference.tsv"))
    args = parser.parse_args()
    peer_options = [word for ours, value, theirs in RECIPE if theirs for word in (theirs, value)]
    steps = dict((ours, value) for ours, value, _ in RECIPE)["--steps"]
    rows = []
    for seed in args.seeds:
        command = [sys.executable, PEER, "--data", DATA, *peer_options, "--eval-every", steps, "--threads", "2", "--seed", str(seed)]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"seed {seed}: the peer failed ({result.returncode}):\n{result.stderr}")
        last = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(f"{seed}\t{last['top1']:.4f}\t{last['top5']:.4f}\t{last['seconds']:.0f}")
        print(f"seed {seed}: top-1 {last['top1']:.4f}, {last['seconds']:.0f} s", flush=True)
    with open(args.out + ".new", "w") as table:
        table.write(f"# PyTorch {torch.__version__}, {os.path.relpath(PEER, os.path.join(HERE, '..', '..'))}, "
                    f"{datetime.date.today()}, written by tests/train/fashion_mnist_reference.py\n")
        table.write("# trellis-train " + " ".join(f"{ours} {value}" for ours, value, _ in RECIPE) + "\n")
        table.write("seed\ttop1\ttop5\tseconds\n" + "\n".join(rows) + "\n")
    os.replace(args.out + ".new", args.out)


if __name__ == "__main__":
    main()
