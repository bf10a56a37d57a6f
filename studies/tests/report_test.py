# SPDX-License-Identifier: Apache-2.0
"""trellis-report on fixtures this test writes (several runs of 1, 2 and 4 ranks, PS and
allreduce, eval records, a cut last line, a resumed run of the older format, a trellis-bench
folder, a campaign folder, a run whose names hold ' ; and <) and on a real trellis-train run.
The expected numbers are worked out by hand below from the fixtures' values."""
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

STUDIES = os.environ.get("TRELLIS_STUDIES_PYTHON") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BUILD = os.environ.get("TRELLIS_BUILD", "")
FIGURES = ["scaling", "time-to-accuracy", "ps-vs-allreduce", "busbw", "memory", "comm-share"]
ODD = "odd'; <run>"
ODD_MODEL = "m'o;d<el>"


def report(*arguments):
    """trellis-report as installed from the build tree where it is built, else its module."""
    command = os.path.join(BUILD, "studies", "trellis-report")
    if BUILD and os.access(command, os.X_OK):
        argv = [command]
    else:
        argv = [sys.executable, "-c", "import sys; from trellis_studies.report.command import main; "
                "sys.exit(main(sys.argv[1:]))"]
    environment = dict(os.environ, TRELLIS_STUDIES_PYTHON=STUDIES, PYTHONPATH=STUDIES)
    return subprocess.run(argv + list(arguments), capture_output=True, text=True, env=environment, timeout=120)


def run_record(model, ranks, strategy, **fields):
    record = {"kind": "run", "model": model, "ranks": ranks, "global_batch": 8 * ranks, "accumulate": 1,
              "device": "cpu", "strategy": strategy, "wireup": "env", "image_size": 32, "steps": 3,
              "warmup_steps": 0, "segment": 1, "train_seconds": 0.0, "time": 1000.0}
    record.update(fields)
    return json.dumps(record)


def train(step, images_per_sec, seconds, **fields):
    record = {"kind": "train", "step": step, "images_per_sec": images_per_sec, "loss": 6.9, "lr": 0.1,
              "segment": 1, "train_seconds": seconds, "time": 1000.0 + seconds}
    record.update(fields)
    return json.dumps(record)


def write(path, lines, end="\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + end)


def total_line(text):
    """The totals record written as text, so that the number stays as the test wrote it."""
    return '{"kind":"train","step":3,"segment":1,"train_seconds":0.3,"time":1000.3,"total_images_per_sec":%s}' % text


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


class Fixtures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="report_test.")
        cls.runs = os.path.join(cls.root, "runs")
        cls.make_fixtures()
        cls.out = os.path.join(cls.root, "report")
        cls.result = report("-o", cls.out, *cls.arguments)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    @classmethod
    def make_fixtures(cls):
        r = cls.runs
        # 1 rank: the baseline, 100 images/sec; evals with the carried time and epochs; peak RSS.
        write(f"{r}/r1/metrics.jsonl", [
            run_record("resnet8", 1, "single process"),
            train(1, 90.0, 0.1), train(2, 100.0, 0.2),
            json.dumps({"kind": "eval", "step": 2, "top1": 0.25, "top5": 0.5, "epoch": 0.5, "train_seconds": 0.2,
                        "segment": 1, "time": 1000.2}),
            '{"kind":"train","step":3,"segment":1,"train_seconds":0.3,"time":1000.3,'
            '"total_images_per_sec":100.0,"peak_rss_bytes":104857600}',
            json.dumps({"kind": "eval", "step": 3, "top1": 0.5, "top5": 0.75, "epoch": 0.75, "train_seconds": 0.3,
                        "segment": 1, "time": 1000.3})])
        # 2 ranks allreduce over TCP, with comm fields: step time 16/160 = 0.1 s.
        write(f"{r}/r2/metrics.jsonl", [
            run_record("resnet8", 2, "allreduce", transport="tcp", binding={"TRELLIS_GPU": "0", "TRELLIS_CPUS": "0-3"}),
            train(1, 160.0, 0.1, comm_seconds=0.02, comm_wait_seconds=0.01),
            train(2, 160.0, 0.2, comm_seconds=0.03, comm_wait_seconds=0.01),
            train(3, 160.0, 0.3, comm_seconds=0.04, comm_wait_seconds=0.02),
            total_line("190.12345678901234")])
        # 4 ranks allreduce over TCP; killed while writing a line after its totals.
        write(f"{r}/r4/metrics.jsonl", [
            run_record("resnet8", 4, "allreduce", transport="tcp"), train(1, 300.0, 0.1),
            total_line("340.00000000000006"), '{"kind":"eval","step":3,"to'], end="")
        # 2 ranks as a parameter server with one server (2 workers).
        write(f"{r}/p2/metrics.jsonl", [
            run_record("resnet8", 3, "ps", transport="tcp", workers=2, servers=1, global_batch=16),
            train(1, 140.0, 0.1), total_line("150.5")])
        # Today's older files: no train_seconds nor segment, resumed once (two run records), no epochs.
        old = [{"kind": "run", "model": "resnet20", "ranks": 1, "global_batch": 8, "strategy": "single process",
                "time": 2000.0},
               {"kind": "eval", "step": 1, "top1": 0.1, "top5": 0.3, "time": 2005.0},
               {"kind": "run", "model": "resnet20", "ranks": 1, "global_batch": 8, "strategy": "single process",
                "time": 3000.0},
               {"kind": "eval", "step": 2, "top1": 0.2, "top5": 0.4, "time": 3002.0}]
        write(f"{r}/old/metrics.jsonl", [json.dumps(line) for line in old])
        # Resumed after a kill -9 that cut a line: the time carried across segments is one line.
        write(f"{r}/resumed/metrics.jsonl", [
            run_record("resnet32", 1, "single process"),
            json.dumps({"kind": "eval", "step": 1, "top1": 0.2, "top5": 0.4, "epoch": 0.25, "train_seconds": 1.0,
                        "segment": 1, "time": 1001.0}),
            '{"kind":"train","step":2,"ima',
            run_record("resnet32", 1, "single process", segment=2, train_seconds=1.5, time=5000.0),
            json.dumps({"kind": "eval", "step": 2, "top1": 0.3, "top5": 0.6, "epoch": 0.5, "train_seconds": 2.5,
                        "segment": 2, "time": 5001.0}),
            total_line("60.125")])
        # Names that must be escaped.
        write(os.path.join(r, ODD, "metrics.jsonl"), [
            run_record(ODD_MODEL, 1, "single process"), train(1, 50.0, 0.1), total_line("50.25")])
        # trellis-bench: a run record, results with kind, and a plain --json line without it.
        result = {"benchmark": "allreduce", "algorithm": "ring", "transport": "tcp", "ranks": 4, "time_us": 10.0,
                  "algbw_gbs": 1.0, "wrong": 0}
        write(f"{r}/bench/bench.jsonl", [
            json.dumps({"kind": "run", "benchmark": "allreduce", "ranks": 4, "transport": "tcp", "algorithm": "ring",
                        "time": 1.0, "hostname": "n1"}),
            json.dumps(dict(result, kind="result", bytes=1024, busbw_gbs=1.5)),
            json.dumps(dict(result, kind="result", bytes=1024, busbw_gbs=2.5)),
            json.dumps(dict(result, bytes=1048576, busbw_gbs=7.25))])
        # A campaign: one run done (2 ranks of resnet56), one not run yet.
        settings = {"model": "resnet56", "nodes": 2, "ranks_per_node": 1, "strategy": "allreduce",
                    "transport": "tcp", "batch_size": 8, "repetition": 1, "container": ""}
        key = hashlib.sha256(json.dumps(settings, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
        pending = dict(settings, repetition=2)
        pending_key = hashlib.sha256(json.dumps(pending, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]
        campaign = f"{r}/campaign"
        write(f"{campaign}/campaign.json", [json.dumps({
            "kind": "trellis-campaign", "name": "tiny", "study": {"models": ["resnet56"]},
            "runs": [{"key": key, "settings": settings, "jobs": [11]},
                     {"key": pending_key, "settings": pending, "jobs": [12]}]})])
        write(f"{campaign}/runs/{key}/settings.json", [json.dumps(settings)])
        write(f"{campaign}/runs/{key}/log/metrics.jsonl", [
            run_record("resnet56", 2, "allreduce", transport="tcp", nodes=2), train(1, 70.0, 0.1),
            total_line("77.75")])
        os.makedirs(f"{campaign}/runs/{pending_key}", exist_ok=True)
        # Killed before its first record: an empty metrics.jsonl is left out too.
        write(f"{campaign}/runs/{pending_key}/log/metrics.jsonl", [], end="")
        cls.campaign_key = key
        cls.arguments = [f"{r}/{name}" for name in ("r1", "r2", "r4", "p2", "old", "resumed", ODD, "bench", "campaign")]

    def figure_rows(self, name):
        return read_csv(os.path.join(self.out, f"{name}.csv"))

    def test_exits_zero_and_prints_every_figure_table(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        for name in FIGURES:
            self.assertIn(f"figure {name}: ", self.result.stdout)
        self.assertIn("cut short", self.result.stderr)
        self.assertIn("not run, or failed early", self.result.stderr)

    def test_every_figure_file_present_and_non_empty(self):
        for name in FIGURES:
            for suffix in ("png", "svg", "csv"):
                path = os.path.join(self.out, f"{name}.{suffix}")
                self.assertTrue(os.path.isfile(path), path)
                self.assertGreater(os.path.getsize(path), 0, path)
        with open(os.path.join(self.out, "scaling.png"), "rb") as stream:
            self.assertEqual(stream.read(8), b"\x89PNG\r\n\x1a\n")

    def test_runs_csv_has_the_totals_as_written(self):
        rows = {row["folder"]: row for row in read_csv(os.path.join(self.out, "runs.csv"))}
        expected = {"r1": "100.0", "r2": "190.12345678901234", "r4": "340.00000000000006", "p2": "150.5",
                    ODD: "50.25", "old": "", "resumed": "60.125", "bench": "",
                    f"campaign/runs/{self.campaign_key}": "77.75"}
        self.assertEqual(len(rows), len(expected))
        for folder, total in expected.items():
            row = rows[os.path.join(self.runs, folder)]
            self.assertEqual(row["total_images_per_sec"], total, folder)
        r2 = rows[os.path.join(self.runs, "r2")]
        self.assertEqual((r2["binding.TRELLIS_GPU"], r2["binding.TRELLIS_CPUS"]), ("0", "0-3"))
        self.assertEqual(r2["model"], "resnet8")
        self.assertEqual(rows[os.path.join(self.runs, "bench")]["benchmark"], "allreduce")
        self.assertEqual(rows[os.path.join(self.runs, "campaign", "runs", self.campaign_key)]["run"],
                         f"tiny/{self.campaign_key}")

    def test_scaling_efficiency_against_the_one_rank_run(self):
        rows = {(row["model"], row["strategy"], row["gpus"]): row for row in self.figure_rows("scaling")}
        # resnet8: 100 images/sec on 1 GPU; the single-process run starts both multi-rank lines.
        expected = {("resnet8", "allreduce", "1"): 1.0,
                    ("resnet8", "allreduce", "2"): 190.12345678901234 / (2 * 100.0),
                    ("resnet8", "allreduce", "4"): 340.00000000000006 / (4 * 100.0),
                    ("resnet8", "ps", "1"): 1.0,
                    ("resnet8", "ps", "2"): 150.5 / (2 * 100.0),
                    ("resnet56", "allreduce", "2"): 1.0,  # the smallest resnet56 run is its own baseline
                    ("resnet32", "single process", "1"): 1.0,
                    (ODD_MODEL, "single process", "1"): 1.0}
        self.assertEqual(set(rows), set(expected))
        for key, efficiency in expected.items():
            self.assertAlmostEqual(float(rows[key]["efficiency"]), efficiency, places=12, msg=key)
        self.assertAlmostEqual(float(rows[("resnet8", "allreduce", "4")]["ideal_images_per_sec"]), 400.0, places=9)
        self.assertEqual(rows[("resnet56", "allreduce", "2")]["nodes"], "2")

    def test_cpu_ranks_are_not_called_gpus(self):
        # Every run here is a CPU run (device "cpu"): the figures speak of ranks.
        with open(os.path.join(self.out, "index.html"), encoding="utf-8") as stream:
            page = stream.read()
        self.assertIn("efficiency against the run on 1 rank of resnet8", page)
        self.assertIn("efficiency against the run on 2 ranks of resnet56", page)
        self.assertNotIn("GPU run", page)
        sys.path.insert(0, STUDIES)
        from trellis_studies.report.figures.common import rank_word
        gpu, cpu = ("resnet8", 8, "fp32", "cuda", 32), ("resnet8", 8, "fp32", "cpu", 32)
        self.assertEqual((rank_word([gpu]), rank_word([gpu], 1), rank_word([cpu]), rank_word([cpu], 1)),
                         ("GPUs", "GPU", "ranks", "rank"))
        self.assertEqual(rank_word([gpu, cpu]), "GPUs or CPU ranks")

    def test_ps_against_allreduce(self):
        rows = {(row["gpus"], row["strategy"]): row for row in self.figure_rows("ps-vs-allreduce")}
        self.assertEqual(set(rows), {("2", "allreduce"), ("2", "ps 1 server"), ("4", "allreduce")})
        self.assertAlmostEqual(float(rows[("2", "ps 1 server")]["over_allreduce"]), 150.5 / 190.12345678901234,
                               places=12)

    def test_time_to_accuracy_per_segment_without_train_seconds(self):
        rows = self.figure_rows("time-to-accuracy")
        r1 = [row for row in rows if row["run"].endswith("r1")]
        self.assertEqual([(r["train_seconds"], r["epochs"], r["top1"], r["top5"]) for r in r1],
                         [("0.2", "0.5", "0.25", "0.5"), ("0.3", "0.75", "0.5", "0.75")])
        old = [row for row in rows if "old" in row["run"]]
        # Each segment from its own start: 2005 - 2000 and 3002 - 3000.
        self.assertEqual([(r["segment"], float(r["train_seconds"]), r["epochs"]) for r in old],
                         [("1", 5.0, ""), ("2", 2.0, "")])
        self.assertIn("each segment is drawn from its own start", self.result.stdout)
        resumed = [row for row in rows if row["run"].endswith("resumed")]
        self.assertEqual([(r["segment"], r["train_seconds"], r["top1"]) for r in resumed],
                         [("1", "1.0", "0.2"), ("2", "2.5", "0.3")])
        self.assertIn("cut short before a resumed segment", self.result.stderr)
        self.assertIn("against steps", self.result.stdout)

    def test_busbw_averages_repetitions(self):
        rows = [(r["transport"], r["algorithm"], r["ranks"], r["bytes"], float(r["busbw_gbs"]))
                for r in self.figure_rows("busbw")]
        self.assertEqual(rows, [("tcp", "ring", "4", "1024", 2.0), ("tcp", "ring", "4", "1048576", 7.25)])

    def test_memory_and_comm_share(self):
        memory = self.figure_rows("memory")
        self.assertEqual([(r["model"], r["peak_rss_bytes"], float(r["peak_rss_mib"])) for r in memory],
                         [("resnet8", "104857600.0", 100.0)])
        share = self.figure_rows("comm-share")
        self.assertEqual(len(share), 1)
        # Steps 2 and 3 (the first sets up connections): 0.03/0.1 and 0.04/0.1; waits 0.01 and 0.02.
        self.assertAlmostEqual(float(share[0]["comm_share"]), 0.35, places=12)
        self.assertAlmostEqual(float(share[0]["comm_wait_share"]), 0.15, places=12)

    def test_html_escapes_what_comes_from_runs(self):
        with open(os.path.join(self.out, "index.html"), encoding="utf-8") as stream:
            page = stream.read()
        self.assertNotIn("<run>", page)
        self.assertNotIn("d<el>", page)
        self.assertIn("odd&#x27;; &lt;run&gt;", page)
        self.assertIn("m&#x27;o;d&lt;el&gt;", page)
        self.assertNotIn("<script", page.lower())
        self.assertIsNone(re.search(r"(src|href)=\"(https?:)?//", page))
        for name in FIGURES:
            self.assertIn(f'<img src="{name}.svg"', page)

    def test_skipped_figures_leave_no_files(self):
        out = os.path.join(self.root, "bench-only")
        os.makedirs(out)
        for suffix in ("png", "svg", "csv"):  # a previous report's figure must go
            write(os.path.join(out, f"memory.{suffix}"), ["old"])
        result = report("-o", out, os.path.join(self.runs, "bench", "bench.jsonl"))
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in FIGURES:
            if name == "busbw":
                continue
            self.assertIn(f"figure {name}: skipped (no runs with ", result.stdout)
            for suffix in ("png", "svg", "csv"):
                self.assertFalse(os.path.exists(os.path.join(out, f"{name}.{suffix}")), f"{name}.{suffix}")
        self.assertTrue(os.path.getsize(os.path.join(out, "busbw.svg")) > 0)
        with open(os.path.join(out, "index.html"), encoding="utf-8") as stream:
            self.assertIn("skipped (no runs with", stream.read())

    def test_usage_errors_exit_2(self):
        for arguments in ([], ["-o"], [self.runs + "/r1"], ["-o", self.out], ["--bogus", "-o", self.out, "x"]):
            result = report(*arguments)
            self.assertEqual(result.returncode, 2, arguments)
            self.assertIn("usage: trellis-report", result.stderr)

    def test_predict_is_not_a_run(self):
        result = report("predict", "--help")
        predictor = os.path.join(STUDIES, "trellis_studies", "predict", "command.py")
        if not os.path.exists(predictor):
            self.assertEqual(result.returncode, 2)
            self.assertIn("trellis-report predict: not available", result.stderr)
        self.assertNotIn("no such folder", result.stderr)

    def test_unreadable_runs_exit_1_naming_the_file(self):
        broken = os.path.join(self.root, "broken")
        write(os.path.join(broken, "metrics.jsonl"), [run_record("resnet8", 1, "local"), "{not json", train(1, 1.0, 0.1)])
        empty = os.path.join(self.root, "empty")
        os.makedirs(empty)
        cases = {broken: os.path.join(broken, "metrics.jsonl") + ":2:",
                 empty: empty + ": neither metrics.jsonl",
                 os.path.join(self.root, "missing"): "missing: no such folder"}
        for folder, message in cases.items():
            result = report("-o", os.path.join(self.root, "unused"), self.runs + "/r1", folder)
            self.assertEqual(result.returncode, 1, folder)
            self.assertIn(message, result.stderr)


class RealRun(unittest.TestCase):
    def test_report_of_a_trellis_train_run(self):
        trainer = os.path.join(BUILD, "trellis-train")
        if not (BUILD and os.access(trainer, os.X_OK)):
            self.skipTest(f"trellis-train is not built ({trainer or 'TRELLIS_BUILD unset'})")
        root = tempfile.mkdtemp(prefix="report_test.real.")
        try:
            logs = os.path.join(root, "log")
            subprocess.run([trainer, "--model", "resnet8", "--steps", "3", "--batch-size", "8", "--data", "synthetic",
                            "--log-dir", logs], check=True, capture_output=True, timeout=120)
            result = report("-o", os.path.join(root, "out"), logs)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(logs, "metrics.jsonl"), encoding="utf-8") as stream:
                total = re.findall(r'"total_images_per_sec":([^,}]+)', stream.read())[-1]
            rows = read_csv(os.path.join(root, "out", "runs.csv"))
            self.assertEqual([row["total_images_per_sec"] for row in rows], [total])
            self.assertEqual(rows[0]["model"], "resnet8")
            scaling = read_csv(os.path.join(root, "out", "scaling.csv"))
            self.assertEqual(float(scaling[0]["images_per_sec"]), float(total))
            for suffix in ("png", "svg"):
                self.assertGreater(os.path.getsize(os.path.join(root, "out", f"scaling.{suffix}")), 0)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
