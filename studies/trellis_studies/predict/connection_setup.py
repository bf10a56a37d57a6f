# SPDX-License-Identifier: Apache-2.0
"""How long a job's ranks take to meet and link before the first step, counted in round trips of
the link between nodes (a round trip = 2 alpha, alpha as trellis-bench p2p measures it), and
what each rank holds, at N ranks with S TCP streams per link:

    rendezvous   rank 0 takes the other ranks' calls one at a time: (N - 1) x 2 round trips
                 (the connection, the caller's address), then the table of addresses goes
                 down the binomial tree, depth ceil(log2 N), each hop a call and the table:
                 depth x (2 round trips + N x E / beta)
    all-gather   the endpoints up and back down that tree: 2 x depth x (1 round trip + N x E / beta)
    links        a rank dials its watch peers one after another, about log2 N + 1 of them, each
                 a control connection and its answer, then S streams: (S + 2) round trips each
    descriptors  (S + 1) per link, and the tree's (a parent, up to log2 N children)

The full mesh of earlier trellis, beside it: each rank made (N - 1) x (S + 1) connections one
after another (a round trip each) and held as many descriptors, and its rendezvous sent rank
0's table of N endpoints to each rank from rank 0 (N x N x E bytes from one link). E is
ENDPOINT_BYTES, an address, a port and a host name. Host costs (the system calls of a
connection, the processes' start) are not counted: the figure is the part that grows with N
and the network's latency. Below 1,024 ranks it is small beside a step and is left out of the
table; the JSON has it for every job."""

import math
from dataclasses import dataclass

ENDPOINT_BYTES = 40
SHOWN_FROM_RANKS = 1024


@dataclass
class Setup:
    ranks: int
    seconds: float = 0.0
    rendezvous_seconds: float = 0.0
    links_seconds: float = 0.0
    descriptors: int = 0
    mesh_seconds: float = 0.0
    mesh_descriptors: int = 0


def watch_peers(ranks):
    """The most watch peers a rank has (trellis's watch_graph): ring neighbours and the ranks
    one bit away."""
    if ranks < 2:
        return 0
    return min(ranks - 1, math.ceil(math.log2(ranks)) + 1)


def connection_setup(ranks, link, streams=2):
    """The set-up of N ranks over LINK (a network Level), or zeros for one rank."""
    setup = Setup(ranks)
    if ranks < 2 or link is None:
        return setup
    trip = 2 * link.alpha
    depth = math.ceil(math.log2(ranks))
    table = ranks * ENDPOINT_BYTES
    setup.rendezvous_seconds = ((ranks - 1) * 2 * trip + depth * (2 * trip + table / link.beta(table))
                                + 2 * depth * (trip + table / link.beta(table)))
    peers = watch_peers(ranks)
    setup.links_seconds = peers * (streams + 2) * trip
    setup.seconds = setup.rendezvous_seconds + setup.links_seconds
    setup.descriptors = peers * (streams + 1) + depth + 1
    setup.mesh_seconds = ((ranks - 1) * trip + ranks * table / link.beta(table)
                          + (ranks - 1) * (streams + 1) * trip)
    setup.mesh_descriptors = (ranks - 1) * (streams + 1) + 1
    return setup
