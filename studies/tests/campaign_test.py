#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""trellis-campaign without Slurm: the study's TOML rules, the matrix's expansion, run keys,
the shell quoting of hostile values (the generated script run by bash with srun replaced by a
recorder of its arguments), the resubmission decisions and the status reasons."""

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.environ.get("TRELLIS_STUDIES_PYTHON")
                or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from trellis_studies.campaign import builtin, command, decide, study  # noqa: E402
from trellis_studies.campaign.folder import CampaignFolder  # noqa: E402
from trellis_studies.campaign.runkey import run_key  # noqa: E402
from trellis_studies.campaign.script import render  # noqa: E402
from trellis_studies.campaign.settings import StudyError  # noqa: E402


def read(text, partition_nodes=None):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as stream:
        stream.write(textwrap.dedent(text))
    try:
        return study.read(stream.name, "test", partition_nodes)
    finally:
        os.unlink(stream.name)


class Rules(unittest.TestCase):
    def refused(self, text, *words):
        with self.assertRaises(StudyError) as caught:
            read(text)
        for word in words:
            self.assertIn(word, str(caught.exception))

    def test_unknown_keys_are_named_with_the_accepted_ones(self):
        self.refused("[run]\nmodle = 'resnet8'\n", "'modle'", "[run]", "model, image_size")
        self.refused("[matrix]\nmodels = ['resnet8']\n", "'models'", "[matrix]", "batch_size")
        self.refused("[slurm]\nqueue = 'x'\n", "'queue'", "partition")
        self.refused("[run]\n[runs]\n", "'runs'", "matrix")
        self.refused("[matrix]\nextra_args = [['--x']]\n", "'extra_args'")

    def test_relative_data_paths_are_the_study_files_folders(self):
        # Each job starts in its run's folder: a relative path is made absolute when read.
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "s.toml")
            with open(path, "w") as stream:
                stream.write('[matrix]\ndata = ["synthetic", "imagenet", "idx:../mnist", "tfrecord:tf/*.rec", '
                             '"/abs/x", "idx:/abs/y"]\n')
            got = [run["data"] for run in study.read(path, "s").runs]
            self.assertEqual(got, ["synthetic", f"{folder}/imagenet", f"idx:{os.path.dirname(folder)}/mnist",
                                   f"tfrecord:{folder}/tf/*.rec", "/abs/x", "idx:/abs/y"])
            # A built-in study's are the current folder's (submit passes it).
            self.assertEqual(study.read(path, "s", relative_to="/work/here").runs[1]["data"], "/work/here/imagenet")

    def test_types_and_values_are_checked(self):
        self.refused("[run]\nbatch_size = '32'\n", "batch_size = '32'", "positive")
        self.refused("[run]\nbatch_size = 0\n", "batch_size = 0")
        self.refused("[run]\nnodes = true\n", "nodes = True")
        self.refused("[run]\nprecision = 'fp8'\n", "fp32, bf16 or fp16")
        self.refused("[matrix]\nnodes = 4\n", "nodes = 4", "non-empty list", "powers-of-2")
        self.refused("[matrix]\nstrategy = ['allreduce:tree']\n", "allreduce:tree", "halving-doubling")
        self.refused("[matrix]\nstrategy = ['ps:0']\n", "ps:0")
        self.refused("[run]\nstrategy = 'ps'\nps_servers = 2\nnodes = 2\n", "ps_servers = 2", "one less")
        self.refused("[slurm]\npartition = 'a b'\n", "partition = 'a b'")
        self.refused("[slurm]\noptions = ['--constraint=a b']\n", "options")
        self.refused("name = 'x;y'\n", "name = 'x;y'")

    def test_newlines_are_refused_everywhere(self):
        self.refused('[run]\ndata = "a\\nb"\n', "data", "newlines")
        self.refused('[run]\nextra_args = ["--x", "a\\rb"]\n', "extra_args", "newlines")
        self.refused('[matrix]\ncontainer = ["", "x\\ny"]\n', "container", "newlines")
        self.refused('description = """two\nlines"""\n', "description", "newlines")
        self.refused('[programs]\ntrain = "a\\nb"\n', "train", "newlines")

    def test_the_builtin_studies_read(self):
        self.assertEqual(builtin.names(), ["container", "models", "network", "ps-vs-allreduce", "scaling",
                                           "time-to-accuracy"])
        for name in builtin.names():
            loaded = study.read(builtin.path(name), name, lambda partition: 4)
            self.assertTrue(loaded.runs, name)
            self.assertEqual(len({run_key(run) for run in loaded.runs}), len(loaded.runs), name)


class Expansion(unittest.TestCase):
    def test_the_matrix_is_a_product_with_repetitions(self):
        loaded = read("""
            [run]
            model = "resnet8"
            ranks_per_node = 2
            repetitions = 2
            [matrix]
            nodes = [1, 2]
            batch_size = [8, 16, 32]
            """)
        self.assertEqual(len(loaded.runs), 12)
        self.assertEqual({(r["nodes"], r["batch_size"], r["repetition"]) for r in loaded.runs},
                         {(n, b, k) for n in (1, 2) for b in (8, 16, 32) for k in (1, 2)})
        self.assertTrue(all(r["model"] == "resnet8" and r["steps"] == 100 for r in loaded.runs))

    def test_nodes_up_to_the_partition(self):
        asked = []
        loaded = read("[slurm]\npartition = 'gpu'\n[matrix]\nnodes = 'powers-of-2'\n",
                      lambda partition: asked.append(partition) or 5)
        self.assertEqual([r["nodes"] for r in loaded.runs], [1, 2, 4])
        self.assertEqual(asked, ["gpu"])

    def test_strategies_carry_their_algorithm_or_servers(self):
        loaded = read("""
            [run]
            nodes = 2
            ranks_per_node = 2
            [matrix]
            strategy = ["allreduce", "allreduce:ring", "ps", "ps:2"]
            algorithm = ["auto", "halving-doubling"]
            """)
        runs = sorted((r["strategy"], r["algorithm"], r["ps_servers"]) for r in loaded.runs)
        # ps runs do not depend on the algorithm: one each, not one per algorithm.
        self.assertEqual(runs, [("allreduce", "auto", 0), ("allreduce", "halving-doubling", 0),
                                ("allreduce", "ring", 0), ("ps", "", 1), ("ps", "", 2)])


class Keys(unittest.TestCase):
    def test_the_key_is_sha256_of_canonical_json(self):
        settings = {"b": 1, "a": "x y"}
        expected = hashlib.sha256(b'{"a":"x y","b":1}').hexdigest()[:12]
        self.assertEqual(run_key(settings), expected)

    def test_spelling_does_not_change_keys_and_settings_do(self):
        one = read("[run]\nmodel = 'resnet8'\nsteps = 5\n").runs
        two = read("[matrix]\nsteps = [5]\n[run]\nmodel = 'resnet8'\nbatch_size = 32\n").runs
        three = read("[run]\nmodel = 'resnet8'\nsteps = 6\n").runs
        self.assertEqual(run_key(one[0]), run_key(two[0]))
        self.assertNotEqual(run_key(one[0]), run_key(three[0]))


HOSTILE = "it's; $(touch PWNED) `touch PWNED` \"x\" \\ *"


class Quoting(unittest.TestCase):
    def test_hostile_values_reach_srun_as_they_were_written(self):
        with tempfile.TemporaryDirectory() as folder:
            run = os.path.join(folder, "run ' $(x)")
            os.makedirs(run)
            with open(os.path.join(folder, "srun"), "w") as stream:
                stream.write("#!/usr/bin/env python3\nimport json, os, sys\n"
                             "json.dump(sys.argv[1:], open(os.environ['ARGV_OUT'], 'w'))\n")
            os.chmod(os.path.join(folder, "srun"), 0o755)
            loaded = read(f"""
                [run]
                data = {json.dumps("/data/" + HOSTILE)}
                container = {json.dumps("/images/a'b;c.sif")}
                extra_args = ["--seed", {json.dumps(HOSTILE)}, "$HOME"]
                [slurm]
                srun_options = ["--cpus-per-task=1"]
                [programs]
                train = {json.dumps("/opt/my trainer/trellis-train;")}
                """)
            settings = loaded.runs[0]
            script = os.path.join(folder, "run.sbatch")
            with open(script, "w") as stream:
                stream.write(render(loaded, settings, run_key(settings), run))
            environment = dict(os.environ, PATH=f"{folder}:{os.environ['PATH']}",
                               ARGV_OUT=os.path.join(folder, "argv.json"))
            subprocess.run(["bash", script, "--resume"], cwd=folder, env=environment, check=True)
            with open(os.path.join(folder, "argv.json")) as stream:
                argv = json.load(stream)
            self.assertFalse(os.path.exists(os.path.join(folder, "PWNED")))
            self.assertEqual(argv[:4], ["--mpi=pmix", "--cpus-per-task=1", "--trellis-image=/images/a'b;c.sif",
                                        "/opt/my trainer/trellis-train;"])
            self.assertEqual(argv[argv.index("--data") + 1], "/data/" + HOSTILE)
            self.assertEqual(argv[argv.index("--seed") + 1], HOSTILE)
            self.assertIn("$HOME", argv)
            self.assertEqual(argv[argv.index("--log-dir") + 1], f"{run}/log")
            self.assertEqual(argv[argv.index("--checkpoint-dir") + 1], f"{run}/checkpoint")
            self.assertEqual(argv[-1], "--resume")
            with open(os.path.join(run, "exit_status")) as stream:
                self.assertEqual(stream.read(), "0\n")


class Decisions(unittest.TestCase):
    def test_resubmission_rules(self):
        table = [  # exit_status, jobs, squeue state, decision, status word
            (None, [], None, decide.SUBMIT, "not submitted"),
            (0, ["7"], None, decide.DONE, "done"),
            (0, ["7"], "COMPLETING", decide.DONE, "done"),
            (None, ["7"], "PENDING", decide.ACTIVE, "queued"),
            (None, ["7"], "RUNNING", decide.ACTIVE, "running"),
            (75, ["7", "8"], "RUNNING", decide.ACTIVE, "running"),
            (75, ["7"], None, decide.RESUME, "stopped"),
            (75, ["7"], "COMPLETED", decide.RESUME, "stopped"),
            (1, ["7"], "FAILED", decide.RESTART, "failed"),
            (137, ["7"], None, decide.RESTART, "failed"),
            (None, ["7"], "CANCELLED", decide.RESTART, "failed"),
            (None, ["7"], None, decide.RESTART, "failed"),
            ("garbage", ["7"], None, decide.RESTART, "failed"),
        ]
        for exit_status, jobs, state, decision, words in table:
            self.assertEqual(decide.decide(exit_status, jobs, state), decision, (exit_status, jobs, state))
            self.assertEqual(decide.state_words(exit_status, jobs, state), words, (exit_status, jobs, state))

    def test_reasons_come_from_the_runs_own_log(self):
        with tempfile.TemporaryDirectory() as run:
            with open(os.path.join(run, "slurm-7.out"), "w") as stream:
                stream.write("step 1\nslurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-11-26 ***\nbye\n")
            reason = decide.failure_reason(run, None, ["7"], "CANCELLED")
            self.assertIn("no exit status", reason)
            self.assertIn("JOB 7 ON n1 CANCELLED", reason)
            # A rank's last words after Slurm's verdict (the order slurm-7.out may have) do not hide it.
            with open(os.path.join(run, "slurm-7.out"), "a") as stream:
                stream.write("[rank 3] received signal 15 (SIGTERM) at step 3: saving a checkpoint and stopping\n")
            self.assertIn("JOB 7 ON n1 CANCELLED", decide.failure_reason(run, None, ["7"], "CANCELLED"))
            os.makedirs(os.path.join(run, "log"))
            with open(os.path.join(run, "log", "metrics.jsonl"), "w") as stream:
                stream.write('{"kind":"run"}\n{"kind":"stop","step":12,"signal":"SIGUSR1"}\n{"kind":"tr')
            self.assertEqual(decide.failure_reason(run, 75, ["7"], None), "exit status 75: stopped by SIGUSR1 at step 12; "
                             "slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT 2026-11-26 ***")
            with open(os.path.join(run, "slurm-7.out"), "w") as stream:
                stream.write("step 1\ncheckpoint saved\n")
            self.assertEqual(decide.failure_reason(run, 75, ["7"], None), "exit status 75: stopped by SIGUSR1 at step 12")
            self.assertEqual(decide.failure_reason(run, 1, [], None), "exit status 1: stopped by SIGUSR1 at step 12")

    def test_a_failed_folder_is_moved_aside(self):
        with tempfile.TemporaryDirectory() as path:
            folder = CampaignFolder(path)
            for number in (1, 2):
                folder.prepare_run("abc", {"x": 1})
                folder.add_job("abc", "9")
                self.assertEqual(folder.move_aside("abc"), os.path.join(path, "runs", f"abc.failed-{number}"))
            self.assertFalse(os.path.exists(folder.run_dir("abc")))


class Command(unittest.TestCase):
    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = command.main(list(argv))
        return code, out.getvalue() + err.getvalue()

    def test_usage_errors_exit_2(self):
        self.assertEqual(self.run_main()[0], 2)
        self.assertEqual(self.run_main("submit")[0], 2)
        self.assertEqual(self.run_main("resubmit", "x")[0], 2)

    def test_dry_run_writes_the_folder_and_status_reads_it(self):
        with tempfile.TemporaryDirectory() as path:
            toml = os.path.join(path, "tiny.toml")
            with open(toml, "w") as stream:
                stream.write("[run]\nmodel = 'resnet8'\nranks_per_node = 2\n[matrix]\nnodes = [1, 2]\n")
            code, output = self.run_main("submit", toml, "--dir", os.path.join(path, "c"), "--dry-run")
            self.assertEqual(code, 0, output)
            with open(os.path.join(path, "c", "campaign.json")) as stream:
                campaign = json.load(stream)
            self.assertEqual(campaign["kind"], "trellis-campaign")
            self.assertEqual(campaign["name"], "tiny")
            self.assertEqual(campaign["study"]["matrix"], {"nodes": [1, 2]})
            for record in campaign["runs"]:
                with open(os.path.join(path, "c", "runs", record["key"], "settings.json")) as stream:
                    self.assertEqual(json.load(stream), record["settings"])
                self.assertEqual(run_key(record["settings"]), record["key"])
            code, output = self.run_main("status", os.path.join(path, "c"))
            self.assertEqual(code, 0)
            self.assertEqual(output.count("not submitted"), 3, output)  # two runs and the summary
            code, output = self.run_main("status", path)
            self.assertEqual(code, 2)
            self.assertIn("not a campaign folder", output)
            code, output = self.run_main("submit", "no-such-study")
            self.assertEqual(code, 2)
            self.assertIn("scaling", output)


class BuiltCommands(unittest.TestCase):
    """The commands as `make` left them in the build tree, run with TRELLIS_STUDIES_PYTHON unset."""

    def setUp(self):
        build = os.environ.get("TRELLIS_BUILD")
        if not build:
            self.skipTest("TRELLIS_BUILD unset: not run by make check, no build tree to run from")
        self.commands = os.path.join(build, "studies")
        self.env = {k: v for k, v in os.environ.items() if k != "TRELLIS_STUDIES_PYTHON"}

    def test_help_from_the_build_tree(self):
        for name in ("trellis-campaign", "trellis-report"):
            done = subprocess.run([os.path.join(self.commands, name), "--help"], env=self.env,
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn(f"usage: {name}", done.stdout)

    def test_a_closed_pipe_ends_status_quietly(self):
        with tempfile.TemporaryDirectory() as path:
            toml = os.path.join(path, "tiny.toml")
            with open(toml, "w") as stream:
                stream.write("[run]\nmodel = 'resnet8'\n[matrix]\nnodes = [1, 2]\n")
            campaign = os.path.join(self.commands, "trellis-campaign")
            subprocess.run([campaign, "submit", toml, "--dir", os.path.join(path, "c"), "--dry-run"],
                           env=self.env, check=True, capture_output=True)
            # The reader is gone before the command writes, as `| grep -q` that has matched.
            reader, writer = os.pipe()
            os.close(reader)
            done = subprocess.run([campaign, "status", os.path.join(path, "c")], env=self.env, stdout=writer,
                                  stderr=subprocess.PIPE, text=True)
            os.close(writer)
            self.assertEqual(done.stderr, "")
            self.assertEqual(done.returncode, 141)


class Resubmission(unittest.TestCase):
    """submit twice, Slurm's answers (sbatch's job ids, squeue's states) given by the test;
    the real ones are tested on the cluster (tests/slurm/train_test.sh)."""

    def setUp(self):
        self.submitted, self.states, self.next_job = [], {}, 101
        self.saved = (command.slurm.submit, command.slurm.job_states)

        def submit(script, run_dir, script_arguments=(), sbatch_arguments=()):
            self.submitted.append((os.path.basename(run_dir), list(script_arguments), list(sbatch_arguments)))
            self.next_job += 1
            return str(self.next_job - 1)
        command.slurm.submit = submit
        command.slurm.job_states = lambda: dict(self.states)

    def tearDown(self):
        command.slurm.submit, command.slurm.job_states = self.saved

    def test_each_run_by_its_exit_status(self):
        with tempfile.TemporaryDirectory() as path:
            toml = os.path.join(path, "five.toml")
            with open(toml, "w") as stream:
                stream.write("[run]\nmodel = 'resnet8'\n[matrix]\nbatch_size = [1, 2, 3, 4, 5]\n")
            folder = CampaignFolder(os.path.join(path, "c"))
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(command.main(["submit", toml, "--dir", folder.path, "--sbatch-arg=--qos=x"]), 0)
            self.assertEqual(len(self.submitted), 5)
            self.assertTrue(all(s[1] == [] and s[2] == ["--qos=x"] for s in self.submitted))
            keys = {settings["batch_size"]: run_key(settings) for settings in study.read(toml, "five").runs}
            for batch, status in ((1, "0"), (2, "75"), (4, "1")):
                with open(os.path.join(folder.run_dir(keys[batch]), "exit_status"), "w") as stream:
                    stream.write(status + "\n")
            # batch 3 still running; batch 5 left no exit status and its job is over (killed).
            self.states = {"103": "RUNNING", "105": "CANCELLED"}
            self.submitted.clear()
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(command.main(["submit", toml, "--dir", folder.path]), 0)
            self.assertEqual(sorted(self.submitted), sorted([(keys[2], ["--resume"], []), (keys[4], [], []),
                                                             (keys[5], [], [])]), out.getvalue())
            self.assertEqual(folder.jobs(keys[2]), ["102", "106"])  # resumed in the same folder
            self.assertIsNone(folder.exit_status(keys[2]))
            for batch in (4, 5):
                self.assertTrue(os.path.isfile(folder.run_dir(keys[batch]) + ".failed-1/run.sbatch"))
                self.assertEqual(len(folder.jobs(keys[batch])), 1)
            self.assertIn("moved aside", out.getvalue())
            with open(folder.campaign_json) as stream:
                jobs = {record["key"]: record["jobs"] for record in json.load(stream)["runs"]}
            self.assertEqual(jobs[keys[1]], ["101"])
            self.assertEqual(jobs[keys[2]], ["102", "106"])
            self.assertEqual(jobs[keys[3]], ["103"])
            self.states.update({job: "PENDING" for job in ("106", "107", "108")})
            status = io.StringIO()
            with contextlib.redirect_stdout(status):
                command.main(["status", folder.path])
            self.assertIn(f"{keys[1]} done", status.getvalue())
            self.assertIn(f"{keys[3]} running", status.getvalue())
            self.assertIn("1 done, 3 queued, 1 running", status.getvalue())


if __name__ == "__main__":
    unittest.main()
