# SPDX-License-Identifier: Apache-2.0
"""How long a registry image takes to reach every node of a job before its first step, each way
trellis can spread it (image_broadcast in trellis.toml):

    each node imports:   import + (N - 1) x S / registry
        N nodes pull the image's S bytes at once, and the registry's link carries them all;
        one pull of them is in the measured import (pull and build of one node alone)
    one import, sbcast:  import + depth x (ceil(S / B) x alpha + W x S / beta)
        srun's host imports once, then sbcast sends blocks of B bytes (8 MiB, its default) down
        a tree of width W (sbcast's own fanout, not slurm.conf's TreeWidth: 8 by default, at
        most 8 in Slurm 22.05, up to 64 with sbcast -F since 23.02): each node forwards each block to up to W
        others over its link; depth is the number of hops that reach N nodes.

alpha and beta are the link between nodes that trellis-bench p2p measured (beta at B)."""

import math
from dataclasses import dataclass

SBCAST_BLOCK = 8 << 20


@dataclass
class ImageInputs:
    image_bytes: float  # the image's compressed layers, about its squashfs (zstd) too
    import_seconds: float  # one node's import alone: pull, unpack, pack
    registry_bytes_per_second: float  # the registry's link out
    tree_width: int = 8  # sbcast's fanout


def tree_depth(nodes, width):
    """Hops from srun's host until a tree in which every node forwards to `width` others has
    reached `nodes` nodes."""
    reached, depth, level = 0, 0, 1
    while reached < nodes:
        level *= width
        reached += level
        depth += 1
    return depth


def each_node_imports(nodes, image: ImageInputs):
    return image.import_seconds + (nodes - 1) * image.image_bytes / image.registry_bytes_per_second


def one_import_then_sbcast(nodes, image: ImageInputs, link):
    if nodes < 2:
        return image.import_seconds  # one node imports it itself
    block = min(SBCAST_BLOCK, image.image_bytes)
    blocks = math.ceil(image.image_bytes / block)
    hop = blocks * link.alpha + image.tree_width * image.image_bytes / link.beta(block)
    return image.import_seconds + tree_depth(nodes, image.tree_width) * hop


def spread_rows(node_counts, image: ImageInputs, link):
    return [{"nodes": n, "each_node_imports_seconds": each_node_imports(n, image),
             "sbcast_seconds": one_import_then_sbcast(n, image, link),
             "tree_depth": tree_depth(n, image.tree_width) if n > 1 else 0} for n in node_counts]


def spread_table(rows, image: ImageInputs):
    lines = [f"the image on every node before the first step: {image.image_bytes / 1e6:.0f} MB, one import "
             f"{image.import_seconds:.2f} s, registry {image.registry_bytes_per_second / 1e9:.3g} GB/s, "
             f"sbcast fanout {image.tree_width}",
             f"  {'nodes':>6} {'each node imports, s':>21} {'one import + sbcast, s':>23} {'hops':>5}"]
    for row in rows:
        lines.append(f"  {row['nodes']:>6} {row['each_node_imports_seconds']:>21.1f} {row['sbcast_seconds']:>23.1f} "
                     f"{row['tree_depth']:>5}")
    return "\n".join(lines)
