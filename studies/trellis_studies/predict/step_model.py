# SPDX-License-Identifier: Apache-2.0
"""A training step on N nodes x G ranks: compute, then the communication the backward pass did
not hide.

    step = compute + exposed,  exposed = max(comm x (1 - overlap), comm - compute)
    images/sec = workers x batch / step
    scaling efficiency = images/sec / (workers x one rank's images/sec)

compute is one rank's measured step, or where given the step of as many ranks training alone
at once (ranks that share cores or memory bandwidth compute slower, with or without a
network); comm is the strategy's schedule on the measured network; overlap is what the
trainer measured for that kind of strategy (an allreduce reduces buckets while the backward
pass runs, the parameter server pushes after it, so one's overlap says nothing of the
other's). Communication cannot hide behind more than the step's own compute."""

from dataclasses import dataclass, field

from trellis_studies.predict.cluster import Cluster
from trellis_studies.predict.connection_setup import connection_setup
from trellis_studies.predict.schedules import Strategy


@dataclass
class Inputs:
    step_seconds: float  # one rank, alone
    batch: int  # images per worker per step
    gradient_bytes: float  # on the wire: the gradient's bytes x the wire format's share
    overlap: dict = field(default_factory=dict)  # "allreduce" | "ps" -> share of communication hidden
    alone: dict = field(default_factory=dict)  # total ranks -> step seconds of that many alone at once


@dataclass
class Prediction:
    strategy: str
    nodes: int
    ranks_per_node: int
    ranks: int
    workers: int
    applies: bool
    compute_seconds: float = 0.0
    comm_seconds: float = 0.0
    exposed_seconds: float = 0.0
    step_seconds: float = 0.0
    images_per_sec: float = 0.0
    scaling_efficiency: float = 0.0
    # before the first step (connection_setup.py), and against a full mesh of links
    setup_seconds: float = 0.0
    setup_descriptors: int = 0
    mesh_setup_seconds: float = 0.0
    mesh_descriptors: int = 0


def predict(strategy, cluster: Cluster, inputs: Inputs, network):
    ranks = cluster.ranks
    workers = strategy.workers(ranks)
    schedule = strategy.schedule(cluster, inputs.gradient_bytes)
    prediction = Prediction(strategy.label, cluster.nodes, cluster.per_node, ranks, workers, schedule is not None)
    setup = connection_setup(ranks, network.get("link" if cluster.nodes > 1 else "shm"))
    prediction.setup_seconds, prediction.setup_descriptors = setup.seconds, setup.descriptors
    prediction.mesh_setup_seconds, prediction.mesh_descriptors = setup.mesh_seconds, setup.mesh_descriptors
    if schedule is None:
        return prediction
    compute = inputs.alone.get(ranks, inputs.step_seconds)
    comm = cluster.schedule_seconds(schedule, network)
    exposed = max(comm * (1 - inputs.overlap.get(strategy.family, 0.0)), comm - compute)
    step = compute + exposed
    images = workers * inputs.batch / step
    one_rank = inputs.batch / inputs.step_seconds
    prediction.compute_seconds, prediction.comm_seconds, prediction.exposed_seconds = compute, comm, exposed
    prediction.step_seconds, prediction.images_per_sec = step, images
    prediction.scaling_efficiency = images / (workers * one_rank)
    return prediction


def allreduce_seconds(algorithm, cluster: Cluster, size, network):
    """One allreduce of SIZE bytes, as trellis-bench allreduce times it; None where the
    algorithm does not apply."""
    schedule = Strategy(algorithm).schedule(cluster, size)
    return None if schedule is None else cluster.schedule_seconds(schedule, network)
