# SPDX-License-Identifier: Apache-2.0
"""What each strategy sends, step by step, as trellis-train's own schedules do
(trainer/comm/*_allreduce.hpp, trainer/train/parameter_server.cpp).

A schedule is a list of phases; a phase is a set of messages sent at the same time, each
(source rank, destination rank, bytes), and how many times it repeats. The cluster maps ranks
onto nodes and links (block or cyclic placement). None stands for a strategy that does not
apply to that job, as the trainer refuses it."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    messages: tuple  # ((source, destination, bytes), ...)
    repeat: int = 1


def ring(ranks, size, order=None):
    """Reduce-scatter then allgather around a ring: 2 (n - 1) steps of size/n bytes. ORDER, the
    ring's ranks in ring order, defaults to 0..n-1."""
    order = list(range(ranks)) if order is None else order
    if ranks < 2:
        return []
    chunk = size / ranks
    step = tuple((order[i], order[(i + 1) % ranks], chunk) for i in range(ranks))
    return [Phase(step, 2 * (ranks - 1))]


def halving_doubling(ranks, size, members=None):
    """Rabenseifner's: recursive halving, partners differing in bit k at step k (near ranks
    first, with the largest halves), then recursive doubling retracing the steps; 2 log2 n steps.
    Only for a power-of-two number of ranks."""
    members = list(range(ranks)) if members is None else members
    if ranks < 2:
        return []
    if ranks & (ranks - 1):
        return None
    halving = []
    for bit in range(ranks.bit_length() - 1):
        share = size / (2 << bit)
        halving.append(Phase(tuple((members[r], members[r ^ (1 << bit)], share) for r in range(ranks))))
    return halving + halving[::-1]


def hierarchical(cluster, size):
    """A ring reduce-scatter inside each node (G - 1 steps of size/G), an allreduce of size/G
    across nodes per rail (halving-doubling for a power-of-two number of nodes, else ring; all
    G rails at once), a ring allgather inside each node. For more than one node with more than
    one rank on each."""
    nodes, per_node, at = cluster.nodes, cluster.per_node, cluster.rank_at
    if nodes < 2 or per_node < 2:
        return None
    chunk = size / per_node
    inside = Phase(tuple((at(n, i), at(n, (i + 1) % per_node), chunk)
                         for n in range(nodes) for i in range(per_node)), per_node - 1)
    rails = []
    for local in range(per_node):
        members = [at(n, local) for n in range(nodes)]
        rail = halving_doubling(nodes, chunk, members)
        rails.append(rail if rail is not None else ring(nodes, chunk, members))
    # The rails run side by side: their k-th phases are one phase.
    across = [Phase(sum((rail[k].messages for rail in rails), ()), rails[0][k].repeat) for k in range(len(rails[0]))]
    return [inside] + across + [inside]


def parameter_server(ranks, servers, size):
    """Synchronous parameter server, servers the last S ranks: each worker pushes its gradient
    split over the servers (size/S to each) and pulls the parameters back the same way; a
    server's endpoint carries workers x size/S each way."""
    workers = ranks - servers
    if servers < 1 or workers < 1:
        return None
    share = size / servers
    push = tuple((w, workers + s, share) for w in range(workers) for s in range(servers))
    pull = tuple((workers + s, w, share) for w in range(workers) for s in range(servers))
    return [Phase(push), Phase(pull)]


@dataclass(frozen=True)
class Strategy:
    name: str  # ring | halving-doubling | hierarchical | ps
    servers: int = 0

    def workers(self, ranks):
        """The ranks that compute a batch: all of them, or all but the servers."""
        return ranks - self.servers if self.name == "ps" else ranks

    @property
    def family(self):
        """Whose overlap applies: the allreduces' or the parameter server's."""
        return "ps" if self.name == "ps" else "allreduce"

    @property
    def label(self):
        return f"ps, {self.servers} server{'s' if self.servers > 1 else ''}" if self.name == "ps" else self.name

    def schedule(self, cluster, size):
        ranks = cluster.ranks
        if self.name == "ring":
            return ring(ranks, size)
        if self.name == "halving-doubling":
            return halving_doubling(ranks, size)
        if self.name == "hierarchical":
            return hierarchical(cluster, size)
        return parameter_server(ranks, self.servers, size)


ALLREDUCE = ("ring", "halving-doubling", "hierarchical")
