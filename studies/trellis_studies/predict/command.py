# SPDX-License-Identifier: Apache-2.0
"""`trellis-report predict`: the options, the inputs they name, and the table or JSON."""

import argparse
import json
import sys

from trellis_studies.predict import tables
from trellis_studies.predict.cluster import PLACEMENTS, Cluster
from trellis_studies.predict.image_spread import ImageInputs, spread_rows, spread_table
from trellis_studies.predict.jsonlines import InputError
from trellis_studies.predict.measured import alone_step_seconds, measured_overlap, rank_timing
from trellis_studies.predict.network import load_network
from trellis_studies.predict.schedules import ALLREDUCE, Strategy
from trellis_studies.predict.step_model import Inputs, allreduce_seconds, predict

# Bytes on the wire per float32 gradient value, as trellis-train's --compress sends them.
WIRE_SHARE = {"none": 1.0, "bf16": 0.5, "fp16": 0.5}
STRATEGIES = ALLREDUCE + ("ps",)


class UsageError(Exception):
    pass


def positive_list(text, option, parse=int):
    try:
        values = [parse(item) for item in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{option} {text}: expected positive numbers separated by commas, e.g. 1,2,4,8")
    return values


def byte_size(text):
    """'16M' -> 16777216: K, M and G are powers of two, as trellis-bench's --sizes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def parser():
    p = argparse.ArgumentParser(
        prog="trellis-report predict",
        description="Predict images/sec and scaling efficiency for N nodes x G ranks per node from one "
                    "rank's measured step, the gradient size, the network trellis-bench measured and the "
                    "overlap trellis-train measured.")
    p.add_argument("run", nargs="?", metavar="RUN",
                   help="trellis-train --log-dir of a one-rank run: step time, batch, gradient size")
    p.add_argument("--step-seconds", type=float, help="one rank's step instead of RUN's (or without RUN)")
    p.add_argument("--batch-size", type=int, help="images per rank per step instead of RUN's")
    p.add_argument("--gradient-bytes", type=byte_size, help="the gradient's float32 bytes instead of RUN's")
    p.add_argument("--compress", choices=sorted(WIRE_SHARE), default="none",
                   help="gradient values on the wire, as trellis-train's --compress (default none)")
    p.add_argument("--overlap-from", action="append", default=[], metavar="DIR",
                   help="--log-dir of a run of several ranks: the share of communication it hid, for the "
                        "strategies of its kind (allreduce or ps); once per kind")
    p.add_argument("--overlap", type=float, metavar="FRACTION",
                   help="that share as a number from 0 to 1, for every strategy")
    p.add_argument("--alone", action="append", default=[], metavar="N=DIR[,DIR...]",
                   help="N ranks trained alone at once: their --log-dirs; their step replaces one rank's "
                        "for jobs of N ranks")
    p.add_argument("--shm", metavar="FILES|ALPHA_US:GBPS",
                   help="trellis-bench p2p --json between two ranks of one node, or alpha and beta")
    p.add_argument("--link", metavar="FILES|ALPHA_US:GBPS",
                   help="trellis-bench p2p --json between two nodes, or alpha and beta")
    p.add_argument("--network", action="append", default=[], metavar="FILE",
                   help="a trellis-bench bench.jsonl whose run lines say the level")
    p.add_argument("--nodes", default="1,2,4,8", help="node counts (default 1,2,4,8)")
    p.add_argument("--ranks-per-node", default="1", help="ranks per node (default 1)")
    p.add_argument("--placement", choices=PLACEMENTS, default="block", help="rank order over nodes (default block)")
    p.add_argument("--rails", type=int, default=1, help="links (NICs) per node (default 1)")
    p.add_argument("--strategies", default=",".join(STRATEGIES),
                   help=f"among {', '.join(STRATEGIES)} (default all)")
    p.add_argument("--ps-servers", default="1", help="parameter servers, a list (default 1)")
    p.add_argument("--allreduce-bytes", metavar="SIZES",
                   help="instead: one allreduce of each size (e.g. 16M,64M) per algorithm, as trellis-bench "
                        "allreduce times it")
    p.add_argument("--image-bytes", type=byte_size, metavar="SIZE",
                   help="instead: the start-up of a job whose step runs in a registry image of SIZE (e.g. "
                        "5G), each node importing it against one import sent by sbcast; needs --link")
    p.add_argument("--image-import-seconds", type=float, metavar="S",
                   help="one node's import of that image alone (srun --trellis-verbose says it)")
    p.add_argument("--registry-gbps", type=float, default=1.25, metavar="GBPS",
                   help="the registry's link out, GB/s (default 1.25: 10 Gb/s)")
    p.add_argument("--tree-width", type=int, default=8, metavar="W",
                   help="sbcast's fanout (default 8, sbcast's own; not slurm.conf's TreeWidth)")
    p.add_argument("--json", action="store_true", help="JSON instead of the table")
    return p


def image_spread(args, network):
    if not args.image_import_seconds or args.image_import_seconds <= 0:
        raise UsageError("--image-bytes needs --image-import-seconds: one node's import of the image alone")
    if args.registry_gbps <= 0 or args.tree_width < 1:
        raise UsageError("--registry-gbps must be above 0 and --tree-width at least 1")
    if "link" not in network:
        raise UsageError("--image-bytes needs --link (trellis-bench p2p between two nodes, or ALPHA_US:GBPS): "
                         "sbcast's blocks cross it")
    image = ImageInputs(args.image_bytes, args.image_import_seconds, args.registry_gbps * 1e9, args.tree_width)
    rows = spread_rows(positive_list(args.nodes, "--nodes"), image, network["link"])
    return json.dumps({"image_spread": rows}) if args.json else spread_table(rows, image)


def strategies(args):
    chosen = []
    for name in args.strategies.split(","):
        if name not in STRATEGIES:
            raise UsageError(f"--strategies: unknown strategy '{name}' (accepted: {', '.join(STRATEGIES)})")
        if name == "ps":
            chosen += [Strategy("ps", servers) for servers in positive_list(args.ps_servers, "--ps-servers")]
        else:
            chosen.append(Strategy(name))
    return chosen


def clusters(args):
    if args.rails < 1:
        raise UsageError(f"--rails {args.rails}: expected 1 or more")
    return [Cluster(n, g, args.placement, args.rails) for g in positive_list(args.ranks_per_node, "--ranks-per-node")
            for n in positive_list(args.nodes, "--nodes")]


def alone_runs(args):
    alone = {}
    for text in args.alone:
        ranks, _, folders = text.partition("=")
        if not ranks.isdigit() or int(ranks) < 1 or not folders:
            raise UsageError(f"--alone {text}: expected N=DIR[,DIR...], N the ranks that trained alone at once")
        alone[int(ranks)] = alone_step_seconds(folders.split(","))
    return alone


def inputs(args):
    timing = rank_timing(args.run) if args.run else None
    step = args.step_seconds or (timing and timing.step_seconds)
    batch = args.batch_size or (timing and timing.batch)
    gradient = args.gradient_bytes or (timing and timing.gradient_bytes)
    if not (step and batch and gradient):
        raise UsageError("give RUN (a one-rank trellis-train --log-dir), or --step-seconds, --batch-size and "
                         "--gradient-bytes")
    for option, value in (("--step-seconds", step), ("--batch-size", batch), ("--gradient-bytes", gradient)):
        if value <= 0:
            raise UsageError(f"{option} {value}: expected a number above 0")
    if args.overlap is not None and args.overlap_from:
        raise UsageError("give --overlap or --overlap-from, not both")
    if args.overlap is not None and not 0 <= args.overlap <= 1:
        raise UsageError(f"--overlap {args.overlap}: expected a share from 0 to 1")
    overlap, sources = {}, {}
    if args.overlap is not None:
        overlap = {"allreduce": args.overlap, "ps": args.overlap}
        sources = {"allreduce": "given", "ps": "given"}
    for folder in args.overlap_from:
        family, share = measured_overlap(folder)
        if family in overlap:
            raise UsageError(f"--overlap-from {folder}: a second overlap for the {family} strategies "
                             f"(the first from {sources[family]})")
        overlap[family], sources[family] = share, folder
    described = {"run": args.run, "model": timing.model if timing else "", "step_seconds": step, "batch": batch,
                 "gradient_bytes": gradient, "compress": args.compress, "overlap": overlap,
                 "overlap_source": sources}
    return Inputs(step, batch, gradient * WIRE_SHARE[args.compress], overlap, alone_runs(args)), described


def main(argv):
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exit:
        return exit.code
    try:
        network = load_network(args.shm, args.link, args.network)
        if args.image_bytes:
            print(image_spread(args, network))
            return 0
        jobs = clusters(args)
        if args.allreduce_bytes:
            sizes = positive_list(args.allreduce_bytes, "--allreduce-bytes", byte_size)
            rows = [{"algorithm": a, "nodes": c.nodes, "ranks_per_node": c.per_node, "placement": c.placement,
                     "bytes": size, "seconds": allreduce_seconds(a, c, size, network)}
                    for c in jobs for size in sizes for a in ALLREDUCE]
            print(json.dumps({"allreduce": rows}) if args.json else tables.allreduce_table(rows))
            return 0
        chosen = strategies(args)
        model, described = inputs(args)
        predictions = [predict(s, c, model, network) for s in chosen for c in jobs]
    except UsageError as error:
        print(f"trellis-report predict: {error}", file=sys.stderr)
        return 2
    except InputError as error:
        print(f"trellis-report predict: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(tables.as_json(described, network, model, predictions)))
    else:
        print(tables.prediction_table(described, network, model, predictions, jobs))
    return 0
