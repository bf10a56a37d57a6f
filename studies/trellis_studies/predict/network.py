# SPDX-License-Identifier: Apache-2.0
"""The network as trellis-bench measured it: per level (shared memory inside a node, the link
between nodes), a latency and a bandwidth by message size.

A message of s bytes, with `load` bytes crossing the same link in that step, takes
alpha + load / beta(s): alpha is the smallest one-way latency measured (half a ping-pong; the
smallest message's, unless a busy machine made it slower than a larger one's), beta(s) the
streaming bandwidth p2p measured at that size, interpolated linearly in log2(size) between the sizes measured and held flat beyond them. The streaming
figure, not ping-pong, gives beta because the collectives keep several segments in flight."""

import bisect
import math
import re

from trellis_studies.predict.jsonlines import InputError, read_records

LEVELS = ("shm", "link")


class Level:
    """One level of the network: alpha (seconds) and beta (bytes/second) by message size."""

    def __init__(self, name, alpha, bandwidths, source):
        if not bandwidths:
            raise InputError(f"{source}: no bandwidth for the {name} level")
        self.name, self.alpha, self.source = name, alpha, source
        self.sizes = sorted(bandwidths)
        self.bandwidths = [bandwidths[size] for size in self.sizes]

    def beta(self, size):
        """Bytes/second for messages of SIZE bytes."""
        sizes, values = self.sizes, self.bandwidths
        if size <= sizes[0]:
            return values[0]
        if size >= sizes[-1]:
            return values[-1]
        upper = bisect.bisect_right(sizes, size)
        lower = upper - 1
        share = (math.log2(size) - math.log2(sizes[lower])) / (math.log2(sizes[upper]) - math.log2(sizes[lower]))
        return values[lower] + share * (values[upper] - values[lower])

    def seconds(self, message, load):
        """One step in which the busiest endpoint of this level carries LOAD bytes in
        messages of MESSAGE bytes."""
        return self.alpha + load / self.beta(message)

    def describe(self):
        return {"level": self.name, "alpha_us": self.alpha * 1e6, "source": self.source,
                "bandwidth_gbs": {str(size): beta / 1e9 for size, beta in zip(self.sizes, self.bandwidths)}}


# "10:1.25": alpha 10 microseconds, beta 1.25 GB/s (the worked examples and links not at hand)
NUMBERS = re.compile(r"^\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*:\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")


def level_from_numbers(name, text):
    """A level from 'ALPHA_US:GBPS', or None when TEXT is not of that form."""
    match = NUMBERS.match(text)
    if not match:
        return None
    alpha_us, gbps = float(match.group(1)), float(match.group(2))
    if gbps <= 0:
        raise InputError(f"--{name} {text}: the bandwidth must be above 0 GB/s")
    return Level(name, alpha_us * 1e-6, {1: gbps * 1e9}, f"{alpha_us:g} us, {gbps:g} GB/s")


def p2p_results(path):
    """(level or None, [p2p result]) for each group of results in a trellis-bench --json
    output or bench.jsonl. A run line (bench.jsonl) says where the results that follow it were
    measured: on one node (shm), or one rank per node (link); plain --json output says nothing."""
    groups, level = [], None
    for record in read_records(path):
        if record.get("kind") == "run":
            nodes, ranks = record.get("nodes"), record.get("ranks")
            level = "shm" if nodes == 1 else "link" if nodes and ranks == nodes else None
            groups.append((level, []))
            continue
        if record.get("benchmark") != "p2p":
            continue
        if not groups:
            groups.append((None, []))
        groups[-1][1].append(record)
    return [(level, results) for level, results in groups if results]


def level_from_results(name, results, source):
    alpha, bandwidths = None, {}
    for number, result in enumerate(results, 1):
        try:
            size, latency_us, gbs = int(result["bytes"]), float(result["latency_us"]), float(result["bandwidth_gbs"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{source}: p2p result {number} lacks bytes, latency_us or bandwidth_gbs: "
                             f"{result}") from None
        if size <= 0 or gbs <= 0:
            continue
        alpha = latency_us * 1e-6 if alpha is None else min(alpha, latency_us * 1e-6)
        # A size measured twice (two files, two rounds) keeps the better figure: a shared
        # machine's noise only ever slows a transfer down.
        bandwidths[size] = max(bandwidths.get(size, 0), gbs * 1e9)
    if not bandwidths:
        raise InputError(f"{source}: no p2p result with bytes and a bandwidth above 0 "
                         f"(trellis-bench p2p --json, or its --log-dir's bench.jsonl)")
    return Level(name, alpha, bandwidths, source)


def load_level(name, text):
    """The level NAME (shm or link) from 'ALPHA_US:GBPS' or from trellis-bench p2p output
    files (comma-separated)."""
    numbers = level_from_numbers(name, text)
    if numbers:
        return numbers
    results = []
    for path in text.split(","):
        for level, group in p2p_results(path):
            if level not in (None, name):
                raise InputError(f"{path}: its run line says these p2p results were measured "
                                 f"{'inside a node' if level == 'shm' else 'between nodes'}, not at the {name} level")
            results += group
    if not results:
        raise InputError(f"{text}: no p2p results (trellis-bench p2p --json lines, "
                         f'{{"benchmark":"p2p","bytes":...,"latency_us":...,"bandwidth_gbs":...}})')
    return level_from_results(name, results, text)


def load_network(shm=None, link=None, files=()):
    """{level name: Level} from --shm, --link and --network (files whose run lines say the
    level)."""
    levels = {}
    if shm:
        levels["shm"] = load_level("shm", shm)
    if link:
        levels["link"] = load_level("link", link)
    gathered = {}
    for path in files:
        for level, results in p2p_results(path):
            if level is None:
                raise InputError(f"{path}: cannot tell whether its p2p results were measured inside a node "
                                 f"or between nodes (no run line with nodes and ranks, or ranks on several "
                                 f"nodes each); give it as --shm FILE or --link FILE")
            if level in levels:
                raise InputError(f"{path}: the {level} level is given twice (by --{level} and by this file)")
            sources, group = gathered.setdefault(level, ([], []))
            sources.append(path)
            group += results
    for level, (sources, results) in gathered.items():
        levels[level] = level_from_results(level, results, ",".join(dict.fromkeys(sources)))
    return levels
