# SPDX-License-Identifier: Apache-2.0
"""Where the ranks sit and what a schedule costs on them.

Each node has `rails` links (one NIC each; local rank i uses rail i mod rails) and shared
memory inside. In one phase, every message between two nodes loads its source's rail outward
and its destination's rail inward; a phase lasts as long as its busiest endpoint: the link
rail (alpha + bytes on it / beta) or the rank that copies the most through shared memory.
Messages of a phase run at once, so a node whose G ranks all send across nodes at once
(halving-doubling's far steps, a ring placed cyclically) divides its link among them."""

from dataclasses import dataclass

from trellis_studies.predict.jsonlines import InputError

PLACEMENTS = ("block", "cyclic")


@dataclass(frozen=True)
class Cluster:
    nodes: int
    per_node: int
    placement: str = "block"  # block: ranks 0..G-1 on the first node; cyclic: rank r on node r mod N
    rails: int = 1

    @property
    def ranks(self):
        return self.nodes * self.per_node

    def node_of(self, rank):
        return rank // self.per_node if self.placement == "block" else rank % self.nodes

    def local_of(self, rank):
        return rank % self.per_node if self.placement == "block" else rank // self.nodes

    def rank_at(self, node, local):
        return node * self.per_node + local if self.placement == "block" else local * self.nodes + node

    def phase_seconds(self, phase, network):
        link_load, shm_load = {}, {}
        link_message = shm_message = 0
        for source, destination, size in phase.messages:
            node, peer = self.node_of(source), self.node_of(destination)
            if node == peer:
                shm_load[source, "out"] = shm_load.get((source, "out"), 0) + size
                shm_load[destination, "in"] = shm_load.get((destination, "in"), 0) + size
                shm_message = max(shm_message, size)
            else:
                out = (node, self.local_of(source) % self.rails, "out")
                into = (peer, self.local_of(destination) % self.rails, "in")
                link_load[out] = link_load.get(out, 0) + size
                link_load[into] = link_load.get(into, 0) + size
                link_message = max(link_message, size)
        seconds = 0.0
        for level, load, message in (("shm", shm_load, shm_message), ("link", link_load, link_message)):
            if load:
                if level not in network:
                    raise InputError(f"no measurement of the {level} level, which a job of {self.nodes} node(s) x "
                                     f"{self.per_node} rank(s) uses: give --{level} (trellis-bench p2p "
                                     f"{'inside a node' if level == 'shm' else 'between two nodes'}, --json)")
                seconds = max(seconds, network[level].seconds(message, max(load.values())))
        return seconds

    def schedule_seconds(self, schedule, network):
        return sum(self.phase_seconds(phase, network) * phase.repeat for phase in schedule)
