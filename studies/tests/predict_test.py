#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The scaling predictor on synthetic timings whose answers are worked out by hand below: each
strategy's schedule on a known network, the step model with overlap 0 and 1, and the readers
on cut lines and missing fields."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.environ.get("TRELLIS_STUDIES_PYTHON") or os.path.join(os.path.dirname(__file__), ".."))

from trellis_studies.predict.cluster import Cluster  # noqa: E402
from trellis_studies.predict.command import main  # noqa: E402
from trellis_studies.predict.connection_setup import connection_setup  # noqa: E402
from trellis_studies.predict.image_spread import (  # noqa: E402
    ImageInputs, each_node_imports, one_import_then_sbcast, tree_depth)
from trellis_studies.predict.jsonlines import InputError  # noqa: E402
from trellis_studies.predict.measured import measured_overlap, rank_timing  # noqa: E402
from trellis_studies.predict.network import level_from_numbers, load_level, load_network  # noqa: E402
from trellis_studies.predict.schedules import Strategy  # noqa: E402
from trellis_studies.predict.step_model import Inputs, allreduce_seconds, predict  # noqa: E402

US, MB = 1e-6, 1e6
# The link: alpha 10 us, beta 1 GB/s; shared memory: alpha 1 us, beta 10 GB/s.
NETWORK = {"link": level_from_numbers("link", "10:1"), "shm": level_from_numbers("shm", "1:10")}
GRADIENT = 100 * MB


def seconds(strategy, nodes, per_node, placement="block", rails=1, size=GRADIENT):
    cluster = Cluster(nodes, per_node, placement, rails)
    return cluster.schedule_seconds(Strategy(*strategy).schedule(cluster, size), NETWORK)


class Collectives(unittest.TestCase):
    def test_ring_four_nodes(self):
        # 2 (n - 1) steps of m/n bytes, each alpha + 25 MB / 1 GB/s
        self.assertAlmostEqual(seconds(("ring",), 4, 1), 2 * 3 * (10 * US + 25 * MB / 1e9), places=12)

    def test_ring_two_by_two_block_and_cyclic(self):
        # Block: each step has one message across each node's link and one in shared memory;
        # the link's is the slower. Cyclic: every hop crosses, two messages share each link.
        self.assertAlmostEqual(seconds(("ring",), 2, 2), 6 * (10 * US + 25 * MB / 1e9), places=12)
        self.assertAlmostEqual(seconds(("ring",), 2, 2, "cyclic"), 6 * (10 * US + 50 * MB / 1e9), places=12)

    def test_halving_doubling(self):
        # Steps of m/2, m/4, then back: m/4, m/2.
        self.assertAlmostEqual(seconds(("halving-doubling",), 4, 1),
                               2 * (10 * US + 50 * MB / 1e9) + 2 * (10 * US + 25 * MB / 1e9), places=12)
        # 2 x 2, block: the m/2 step pairs ranks of one node (shared memory); the m/4 step
        # sends both ranks of a node across its one link at once (50 MB on it).
        self.assertAlmostEqual(seconds(("halving-doubling",), 2, 2),
                               2 * (1 * US + 50 * MB / 10e9) + 2 * (10 * US + 50 * MB / 1e9), places=12)
        self.assertIsNone(Strategy("halving-doubling").schedule(Cluster(3, 1), GRADIENT))

    def test_hierarchical(self):
        # Ring reduce-scatter in the node (1 step of m/2), per rail halving-doubling of m/2 over
        # 2 nodes (2 steps of m/4; both rails on one link: 50 MB on it, on two links 25 MB
        # each), ring allgather in the node.
        inside = 1 * US + 50 * MB / 10e9
        self.assertAlmostEqual(seconds(("hierarchical",), 2, 2), 2 * inside + 2 * (10 * US + 50 * MB / 1e9), places=12)
        self.assertAlmostEqual(seconds(("hierarchical",), 2, 2, rails=2),
                               2 * inside + 2 * (10 * US + 25 * MB / 1e9), places=12)
        # 3 nodes: a ring per rail, 4 steps of m/2/3 bytes
        self.assertAlmostEqual(seconds(("hierarchical",), 3, 2, rails=2),
                               2 * inside + 4 * (10 * US + 50 * MB / 3 / 1e9), places=12)
        self.assertIsNone(Strategy("hierarchical").schedule(Cluster(4, 1), GRADIENT))
        self.assertIsNone(Strategy("hierarchical").schedule(Cluster(1, 4), GRADIENT))

    def test_parameter_server(self):
        # 4 nodes, 1 server: 3 workers push 100 MB each into the server's link, then pull.
        self.assertAlmostEqual(seconds(("ps", 1), 4, 1), 2 * (10 * US + 300 * MB / 1e9), places=12)
        # 2 servers: 2 workers, each sends 50 MB to each server; a server's link carries
        # 2 x 50 MB, a worker's 2 x 50 MB.
        self.assertAlmostEqual(seconds(("ps", 2), 4, 1), 2 * (10 * US + 100 * MB / 1e9), places=12)
        self.assertIsNone(Strategy("ps", 1).schedule(Cluster(1, 1), GRADIENT))

    def test_one_rank_sends_nothing(self):
        self.assertEqual(seconds(("ring",), 1, 1), 0)
        self.assertEqual(allreduce_seconds("ring", Cluster(1, 1), GRADIENT, NETWORK), 0)


class StepModel(unittest.TestCase):
    ring_comm = 2 * 3 * (10 * US + 25 * MB / 1e9)

    def test_overlap_zero(self):
        inputs = Inputs(step_seconds=0.2, batch=32, gradient_bytes=GRADIENT, overlap={"allreduce": 0})
        p = predict(Strategy("ring"), Cluster(4, 1), inputs, NETWORK)
        self.assertAlmostEqual(p.step_seconds, 0.2 + self.ring_comm)
        self.assertAlmostEqual(p.images_per_sec, 4 * 32 / (0.2 + self.ring_comm))
        self.assertAlmostEqual(p.scaling_efficiency, 0.2 / (0.2 + self.ring_comm))

    def test_overlap_one(self):
        # All of it hidden while the compute lasts longer; what is left over shows.
        p = predict(Strategy("ring"), Cluster(4, 1), Inputs(0.2, 32, GRADIENT, overlap={"allreduce": 1}), NETWORK)
        self.assertAlmostEqual(p.step_seconds, 0.2)
        self.assertAlmostEqual(p.scaling_efficiency, 1.0)
        p = predict(Strategy("ring"), Cluster(4, 1), Inputs(0.1, 32, GRADIENT, overlap={"allreduce": 1}), NETWORK)
        self.assertAlmostEqual(p.exposed_seconds, self.ring_comm - 0.1)
        # The allreduce's overlap is not the parameter server's: none measured, none hidden.
        p = predict(Strategy("ps", 1), Cluster(4, 1), Inputs(0.2, 32, GRADIENT, overlap={"allreduce": 1}), NETWORK)
        self.assertAlmostEqual(p.exposed_seconds, 2 * (10 * US + 300 * MB / 1e9))

    def test_alone_replaces_the_compute_and_ps_counts_workers(self):
        inputs = Inputs(0.2, 32, GRADIENT, overlap={"ps": 0.5}, alone={4: 0.25})
        p = predict(Strategy("ps", 1), Cluster(4, 1), inputs, NETWORK)
        comm = 2 * (10 * US + 300 * MB / 1e9)
        self.assertEqual(p.workers, 3)
        self.assertAlmostEqual(p.compute_seconds, 0.25)
        self.assertAlmostEqual(p.step_seconds, 0.25 + max(comm * 0.5, comm - 0.25))
        self.assertAlmostEqual(p.images_per_sec, 3 * 32 / p.step_seconds)
        self.assertAlmostEqual(p.scaling_efficiency, p.images_per_sec / (3 * 32 / 0.2))


def write(folder, name, lines):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as stream:
        stream.write("\n".join(lines))
    return path


RUN = {"kind": "run", "model": "resnet50", "global_batch": 8, "ranks": 1, "parameters": 1000}


def train(step, ips, **more):
    return json.dumps(dict({"kind": "train", "step": step, "images_per_sec": ips}, **more))


class Readers(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="predict-test.")

    def test_step_time_after_warmup_and_a_cut_line(self):
        # Steps 1 and 2 are warm-up; steps 3 and 4 take 8/16 and 8/32 s; the last line was cut.
        write(self.dir + "/one", "metrics.jsonl", [json.dumps(RUN), train(1, 1), train(2, 1), train(3, 16),
                                                   train(4, 32), '{"kind": "train", "step": 5, "images_p'])
        timing = rank_timing(self.dir + "/one")
        self.assertAlmostEqual(timing.step_seconds, (0.5 + 0.25) / 2)
        self.assertEqual((timing.batch, timing.gradient_bytes, timing.model), (8, 4000, "resnet50"))

    def test_the_trainers_total_when_present(self):
        write(self.dir + "/t", "metrics.jsonl", [json.dumps(RUN), train(3, 16), train(4, 32),
                                                 json.dumps({"kind": "train", "step": 4, "total_images_per_sec": 20})])
        self.assertAlmostEqual(rank_timing(self.dir + "/t").step_seconds, 8 / 20)

    def test_gradient_bytes_when_present(self):
        write(self.dir + "/g", "metrics.jsonl", [json.dumps(dict(RUN, gradient_bytes=2000)), train(3, 8)])
        self.assertEqual(rank_timing(self.dir + "/g").gradient_bytes, 2000)

    def test_missing_fields_name_the_file(self):
        run = {k: v for k, v in RUN.items() if k != "parameters"}
        path = write(self.dir + "/m", "metrics.jsonl", [json.dumps(run), train(3, 8)])
        with self.assertRaisesRegex(InputError, f"{path}: the run record has no parameters"):
            rank_timing(self.dir + "/m")
        path = write(self.dir + "/n", "metrics.jsonl", [json.dumps(RUN)])
        with self.assertRaisesRegex(InputError, f"{path}: no train record"):
            rank_timing(self.dir + "/n")
        with self.assertRaisesRegex(InputError, "no metrics.jsonl"):
            rank_timing(self.dir + "/absent")
        path = write(self.dir + "/b", "metrics.jsonl", [json.dumps(RUN), "{broken", train(3, 8)])
        with self.assertRaisesRegex(InputError, f"{path}:2: not a JSON object"):
            rank_timing(self.dir + "/b")

    def test_overlap_measured(self):
        write(self.dir + "/two", "metrics.jsonl", [json.dumps(dict(RUN, ranks=2, strategy="allreduce")),
                                                   train(3, 8, comm_seconds=0.1, comm_wait_seconds=0.04),
                                                   train(4, 8, comm_seconds=0.3, comm_wait_seconds=0.12)])
        family, share = measured_overlap(self.dir + "/two")
        self.assertEqual(family, "allreduce")
        self.assertAlmostEqual(share, 1 - 0.16 / 0.4)
        path = write(self.dir + "/one", "metrics.jsonl", [json.dumps(dict(RUN, strategy="single process")),
                                                          train(3, 8)])
        with self.assertRaisesRegex(InputError, f"{path}: the run record's strategy is 'single process'"):
            measured_overlap(self.dir + "/one")
        write(self.dir + "/nocomm", "metrics.jsonl", [json.dumps(dict(RUN, strategy="ps")), train(3, 8)])
        with self.assertRaisesRegex(InputError, "comm_seconds"):
            measured_overlap(self.dir + "/nocomm")

    def test_p2p_files(self):
        # Plain --json output: alpha from the smallest size, beta interpolated in log2(size).
        plain = write(self.dir, "p2p.json", [
            json.dumps({"benchmark": "p2p", "bytes": 1024, "latency_us": 5.0, "bandwidth_gbs": 1.0}),
            json.dumps({"benchmark": "p2p", "bytes": 1048576, "latency_us": 900.0, "bandwidth_gbs": 3.0}),
            '{"benchmark": "p2p", "bytes": 167'])
        level = load_level("link", plain)
        self.assertAlmostEqual(level.alpha, 5 * US)
        self.assertAlmostEqual(level.beta(32768), 2e9)
        self.assertAlmostEqual(level.beta(64), 1e9)
        self.assertAlmostEqual(level.beta(1 << 30), 3e9)
        # bench.jsonl: run lines say the level; results of other benchmarks are skipped.
        bench = write(self.dir, "bench.jsonl", [
            json.dumps({"kind": "run", "benchmark": "p2p", "ranks": 2, "nodes": 1}),
            json.dumps({"kind": "result", "benchmark": "p2p", "bytes": 8, "latency_us": 2.0, "bandwidth_gbs": 4.0}),
            json.dumps({"kind": "run", "benchmark": "p2p", "ranks": 2, "nodes": 2}),
            json.dumps({"kind": "result", "benchmark": "p2p", "bytes": 8, "latency_us": 20.0, "bandwidth_gbs": 0.5}),
            json.dumps({"kind": "result", "benchmark": "allreduce", "bytes": 8, "time_us": 1.0})])
        levels = load_network(files=[bench])
        self.assertAlmostEqual(levels["shm"].alpha, 2 * US)
        self.assertAlmostEqual(levels["link"].beta(8), 0.5e9)
        with self.assertRaisesRegex(InputError, "cannot tell"):
            load_network(files=[plain])
        missing = write(self.dir, "short.json", [json.dumps({"benchmark": "p2p", "bytes": 8})])
        with self.assertRaisesRegex(InputError, "short.json: p2p result 1 lacks"):
            load_level("link", missing)


class Command(unittest.TestCase):
    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
        return status, out.getvalue(), err.getvalue()

    def test_json_and_exit_statuses(self):
        status, out, _ = self.run_main("--step-seconds", "0.2", "--batch-size", "32", "--gradient-bytes", "100000000",
                                       "--link", "10:1", "--nodes", "1,4", "--strategies", "ring", "--json")
        self.assertEqual(status, 0)
        four = json.loads(out)["predictions"][1]
        self.assertAlmostEqual(four["comm_seconds"], StepModel.ring_comm)
        self.assertEqual(self.run_main("--nodes", "x")[0], 2)
        self.assertEqual(self.run_main("--step-seconds", "1", "--batch-size", "1", "--gradient-bytes", "4",
                                       "--strategies", "bogus")[0], 2)
        self.assertEqual(self.run_main("--step-seconds", "-1", "--batch-size", "1", "--gradient-bytes", "4")[0], 2)
        status, _, err = self.run_main("/nonexistent-run", "--link", "10:1")
        self.assertEqual(status, 1)
        self.assertIn("/nonexistent-run", err)
        # No link measured for a job across nodes: says which option to give.
        status, _, err = self.run_main("--step-seconds", "1", "--batch-size", "1", "--gradient-bytes", "4",
                                       "--nodes", "2")
        self.assertEqual(status, 1)
        self.assertIn("--link", err)

    def test_bf16_halves_the_bytes(self):
        _, out, _ = self.run_main("--step-seconds", "0.2", "--batch-size", "32", "--gradient-bytes", "100000000",
                                  "--link", "10:1", "--nodes", "4", "--strategies", "ring", "--compress", "bf16",
                                  "--json")
        self.assertAlmostEqual(json.loads(out)["predictions"][0]["comm_seconds"], 6 * (10 * US + 12.5 * MB / 1e9))


class ImageSpread(unittest.TestCase):
    # 100 MB (12 blocks of 8 MiB), one import 10 s, registry 1 GB/s, link alpha 10 us and 1 GB/s.
    IMAGE = ImageInputs(100 * MB, 10.0, 1e9, tree_width=16)

    def test_tree_depth(self):
        self.assertEqual([tree_depth(n, 16) for n in (1, 16, 17, 272, 273, 1024)], [1, 1, 2, 2, 3, 3])
        self.assertEqual(tree_depth(1024, 50), 2)

    def test_each_way_by_hand(self):
        # 64 nodes pulling at once: 63 more pulls of 100 MB through the registry's 1 GB/s
        self.assertAlmostEqual(each_node_imports(64, self.IMAGE), 10 + 63 * 0.1)
        # two hops, each 12 blocks' alpha and 16 copies of 100 MB at 1 GB/s
        link = NETWORK["link"]
        self.assertAlmostEqual(one_import_then_sbcast(64, self.IMAGE, link), 10 + 2 * (12 * 10 * US + 16 * 0.1))
        self.assertEqual(one_import_then_sbcast(1, self.IMAGE, link), 10)

    def test_command(self):
        status, out, _ = Command.run_main(self, "--image-bytes", "100M", "--image-import-seconds", "10",
                                          "--link", "10:1", "--nodes", "64,1024", "--json")
        self.assertEqual(status, 0)
        rows = json.loads(out)["image_spread"]
        self.assertEqual([r["nodes"] for r in rows], [64, 1024])
        self.assertGreater(rows[1]["each_node_imports_seconds"], rows[1]["sbcast_seconds"])
        status, _, err = Command.run_main(self, "--image-bytes", "100M", "--image-import-seconds", "10")
        self.assertEqual(status, 2)
        self.assertIn("--link", err)
        status, _, err = Command.run_main(self, "--image-bytes", "100M", "--link", "10:1")
        self.assertEqual(status, 2)
        self.assertIn("--image-import-seconds", err)


class ConnectionSetup(unittest.TestCase):
    # The link: alpha 10 us (a round trip 20 us), 1 GB/s; 2 streams a link.
    def test_by_hand_at_1024_ranks(self):
        setup = connection_setup(1024, NETWORK["link"])
        trip, depth, table = 20 * US, 10, 1024 * 40 / 1e9
        rendezvous = 1023 * 2 * trip + depth * (2 * trip + table) + 2 * depth * (trip + table)
        self.assertAlmostEqual(setup.rendezvous_seconds, rendezvous)
        self.assertAlmostEqual(setup.links_seconds, 11 * 4 * trip)  # 11 watch peers, 4 round trips each
        self.assertEqual(setup.descriptors, 11 * 3 + 11)
        self.assertAlmostEqual(setup.mesh_seconds, 1023 * trip + 1024 * table + 1023 * 3 * trip)
        self.assertEqual(setup.mesh_descriptors, 1023 * 3 + 1)
        self.assertEqual(connection_setup(1, NETWORK["link"]).seconds, 0)

    def test_the_table_shows_it_from_1024_ranks(self):
        argv = ["--step-seconds", "0.2", "--batch-size", "32", "--gradient-bytes", "100000000", "--link", "10:1",
                "--shm", "1:10", "--strategies", "ring", "--ranks-per-node", "8"]
        _, small, _ = Command.run_main(self, *argv, "--nodes", "2,4")
        self.assertNotIn("connection set-up", small)
        _, large, _ = Command.run_main(self, *argv, "--nodes", "4,128")
        self.assertIn("connection set-up before the first step", large)
        row = next(line for line in large.splitlines() if line.strip().startswith("descriptors a rank"))
        self.assertEqual(row.split()[-2:], ["44", "(3070)"])
        self.assertEqual(row.split()[3], "-")  # 32 ranks: not shown
        _, out, _ = Command.run_main(self, *argv, "--nodes", "128", "--json")
        self.assertAlmostEqual(json.loads(out)["predictions"][0]["setup_seconds"],
                               connection_setup(1024, NETWORK["link"]).seconds)


class SeedsWorkedExample(unittest.TestCase):
    """The worked example of trellis-report(1)'s PREDICT section, from its assumptions (not
    fitted to the seeds' figures, which are printed beside it): ResNet-50, 25.6M parameters
    (102.4 MB of float32 gradients), 64 images per GPU, no overlap, Horovod's ring.
    P100s: a step of 64/226 s (226 img/s on one), 4 per node, PCIe between them (5 us,
    10 GB/s), 25 Gbit/s between nodes (5 us, 3.125 GB/s). V100s: a step of 64/360 s, 8 per
    node, NVLink (2 us, 40 GB/s), EDR InfiniBand (2 us, 12.5 GB/s) or 10 GbE (30 us, 1.25 GB/s)."""

    def efficiency(self, step, nodes, per_node, shm, link):
        network = {"shm": level_from_numbers("shm", shm), "link": level_from_numbers("link", link)}
        inputs = Inputs(step, 64, 102.4 * MB)
        return predict(Strategy("ring"), Cluster(nodes, per_node), inputs, network)

    def test_p100(self):
        step = 64 / 226
        by_hand = {  # GPUs: (nodes, GPUs per node, ring steps, bytes a step, alpha, beta)
            2: (1, 2, 2, 51.2 * MB, 5 * US, 10e9), 4: (1, 4, 6, 25.6 * MB, 5 * US, 10e9),
            8: (2, 4, 14, 12.8 * MB, 5 * US, 3.125e9), 16: (4, 4, 30, 6.4 * MB, 5 * US, 3.125e9)}
        seeds = {2: 426, 4: 704, 8: 1368, 16: 2576}
        for gpus, (nodes, per_node, steps, size, alpha, beta) in by_hand.items():
            p = self.efficiency(step, nodes, per_node, "5:10", "5:3.125")
            self.assertAlmostEqual(p.images_per_sec, gpus * 64 / (step + steps * (alpha + size / beta)), places=6)
            print(f"P100 x {gpus:2d}: predicted {p.images_per_sec:6.0f} img/s ({p.scaling_efficiency:.0%}), "
                  f"seeds {seeds[gpus]} ({seeds[gpus] / (226 * gpus):.0%})", file=sys.stderr)
        self.assertEqual([round(self.efficiency(step, n, g, "5:10", "5:3.125").images_per_sec)
                          for n, g in ((1, 2), (1, 4), (2, 4), (4, 4))], [436, 857, 1503, 2970])

    def test_v100_infiniband_against_ethernet(self):
        step = 64 / 360
        for link, alpha, beta, seed, expected in (("2:12.5", 2 * US, 12.5e9, 0.89, 0.92),
                                                  ("30:1.25", 30 * US, 1.25e9, 0.65, 0.52)):
            p = self.efficiency(step, 8, 8, "2:40", link)
            # 64 ranks, 8 per node in blocks: 126 steps of 1.6 MB, the link's hop the slowest
            self.assertAlmostEqual(p.scaling_efficiency, step / (step + 126 * (alpha + 1.6 * MB / beta)), places=9)
            self.assertEqual(round(p.scaling_efficiency, 2), expected)
            print(f"V100 x 64 over {link}: predicted {p.scaling_efficiency:.0%}, seeds {seed:.0%}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
