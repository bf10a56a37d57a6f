#!/usr/bin/python3
"""gpu_check_measure.py WHAT ARGS (for scripts/gpu-check): figures from the runs' files, printed as space-separated fields
("-" where there is none). Exits 1 with the reason on stderr when a run has no figure."""
import datetime
import json
import sys


def trellis(metrics, warmup, batch):
    # The timed window: from the record of the last warm-up step to the last step's. Each
    # record is stamped when its step's loss has reached the host; trellis waits for that
    # every step, so the host is never more than part of a step (the backward pass) ahead
    # of the GPU, about the same lag at both ends of the window, which then cancels.
    records = []
    for line in open(metrics):
        try:
            record = json.loads(line)
        except ValueError:  # a line cut short by the stop
            continue
        if record.get("kind") == "train" and "loss" in record and record["step"] >= int(warmup):
            records.append(record)
    if len(records) < 2 or records[0]["step"] != int(warmup):
        sys.exit(f"{len(records)} step records from step {warmup} on: the warm-up did not finish")
    first, last = records[0], records[-1]
    steps, seconds = last["step"] - first["step"], last["time"] - first["time"]
    print(f"{steps * int(batch) / seconds:.1f} {steps} {seconds:.2f} {first['time']:.3f} {last['time']:.3f}")


def pytorch(output):
    lines = [line for line in open(output) if line.startswith("{")]
    if not lines:
        sys.exit("no result line")
    r = json.loads(lines[-1])
    print(f"{r['images_per_sec']:.1f} {r['steps']} {r['seconds']:.2f} {r['window_start']:.3f} {r['window_end']:.3f} "
          f"{r['peak_mib']:.0f} {r['torch']} {r['cudnn']}")


def samples(csv, start, end):
    # nvidia-smi's rows: timestamp, memory.used MiB, utilization.gpu %. Peak memory over the
    # whole run (start-up included: that memory is held too), utilisation over the window.
    peak, in_window = None, []
    for line in open(csv):
        fields = [f.strip() for f in line.split(",")]
        try:
            when = datetime.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            used, utilisation = float(fields[1]), float(fields[2])
        except (ValueError, IndexError):
            continue
        peak = used if peak is None else max(peak, used)
        if start != "-" and float(start) <= when <= float(end):
            in_window.append(utilisation)
    mean = f"{sum(in_window) / len(in_window):.0f}" if in_window else "-"
    print(f"{peak:.0f}" if peak is not None else "-", mean, len(in_window))


what = sys.argv[1]
{"trellis": trellis, "pytorch": pytorch, "samples": samples}[what](*sys.argv[2:])
