# SPDX-License-Identifier: Apache-2.0
"""The predictor's output: a text table per figure asked for, or one JSON object."""

from dataclasses import asdict

from trellis_studies.predict.connection_setup import SHOWN_FROM_RANKS


def busbw_gbs(size, ranks, seconds):
    """nccl-tests' bus bandwidth, as trellis-bench prints it."""
    return size * 2 * (ranks - 1) / ranks / seconds / 1e9 if seconds else 0.0


def network_lines(network):
    lines = []
    for name in ("shm", "link"):
        level = network.get(name)
        if level:
            points = ", ".join(f"{beta / 1e9:.3g} GB/s at {size} B" for size, beta in
                               list(zip(level.sizes, level.bandwidths))[-2:])
            lines.append(f"  {name:<4} alpha {level.alpha * 1e6:.1f} us; {points} ({level.source})")
    return lines or ["  (none given: one-rank jobs only)"]


def prediction_table(described, network, model, predictions, jobs):
    model_name = f", {described['model']}" if described["model"] else ""
    lines = [f"one rank: {described['batch']} images a step in {described['step_seconds'] * 1e3:.1f} ms "
             f"({described['batch'] / described['step_seconds']:.1f} images/sec){model_name}; "
             f"gradient {described['gradient_bytes'] / 1e6:.1f} MB "
             f"({model.gradient_bytes / 1e6:.1f} MB on the wire, --compress {described['compress']})"]
    for family in ("allreduce", "ps"):
        share, source = model.overlap.get(family), described["overlap_source"].get(family)
        measured = f"{share:.2f} ({source})" if source else "0 (not measured: give --overlap-from)"
        lines.append(f"overlap, {family}: {measured}")
    for ranks, seconds in sorted(model.alone.items()):
        lines.append(f"{ranks} ranks alone at once: {seconds * 1e3:.1f} ms a step")
    lines += ["network:"] + network_lines(network)
    columns = [f"{c.nodes}x{c.per_node}" for c in jobs]
    width = max(24, *(len(p.strategy) + 2 for p in predictions))
    lines.append("images/sec (scaling efficiency), nodes x ranks per node:")
    lines.append(f"  {'strategy':<{width}}" + "".join(f"{c:>16}" for c in columns))
    for strategy in dict.fromkeys(p.strategy for p in predictions):
        cells = []
        for p in (p for p in predictions if p.strategy == strategy):
            cells.append(f"{p.images_per_sec:9.1f} ({p.scaling_efficiency:4.0%})" if p.applies else "n/a")
        lines.append(f"  {strategy:<{width}}" + "".join(f"{c:>16}" for c in cells))
    lines.append("communication a step, ms (exposed after overlap):")
    for strategy in dict.fromkeys(p.strategy for p in predictions):
        cells = [f"{p.comm_seconds * 1e3:.1f} ({p.exposed_seconds * 1e3:.1f})" if p.applies else "n/a"
                 for p in predictions if p.strategy == strategy]
        lines.append(f"  {strategy:<{width}}" + "".join(f"{c:>16}" for c in cells))
    if any(p.ranks >= SHOWN_FROM_RANKS for p in predictions):
        first = predictions[0].strategy  # the same for every strategy
        jobs_of_first = [p for p in predictions if p.strategy == first]
        lines.append(f"connection set-up before the first step, s (a full mesh), jobs of {SHOWN_FROM_RANKS} ranks "
                     "and more:")
        lines.append(f"  {'seconds':<{width}}" + "".join(
            f"{f'{p.setup_seconds:.2f} ({p.mesh_setup_seconds:.1f})' if p.ranks >= SHOWN_FROM_RANKS else '-':>16}"
            for p in jobs_of_first))
        lines.append(f"  {'descriptors a rank':<{width}}" + "".join(
            f"{f'{p.setup_descriptors} ({p.mesh_descriptors})' if p.ranks >= SHOWN_FROM_RANKS else '-':>16}"
            for p in jobs_of_first))
    lines.append("n/a: the trainer refuses it (halving-doubling: a power-of-two number of ranks; hierarchical: "
                 "several nodes with several ranks each; ps: at least one worker)")
    return "\n".join(lines)


def as_json(described, network, model, predictions):
    return {"inputs": dict(described, wire_bytes=model.gradient_bytes,
                           alone_step_seconds={str(k): v for k, v in model.alone.items()}),
            "network": [level.describe() for level in network.values()],
            "predictions": [asdict(p) for p in predictions]}


def allreduce_table(rows):
    lines = [f"  {'algorithm':<17} {'nodes x ranks':>13} {'placement':>9} {'bytes':>10} {'time ms':>9} "
             f"{'busbw GB/s':>10}"]
    for row in rows:
        seconds = row["seconds"]
        ranks = row["nodes"] * row["ranks_per_node"]
        cells = (f"{seconds * 1e3:9.2f} {busbw_gbs(row['bytes'], ranks, seconds):10.3f}" if seconds is not None
                 else f"{'n/a':>9} {'n/a':>10}")
        lines.append(f"  {row['algorithm']:<17} {row['nodes']:>7}x{row['ranks_per_node']:<5} {row['placement']:>9} "
                     f"{row['bytes']:>10} {cells}")
    return "\n".join(lines)
