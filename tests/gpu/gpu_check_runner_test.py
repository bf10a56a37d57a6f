#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/gpu-check with its Runner replaced: the programs' answers are given by the test, so
that what gpu-check makes of them is checked without any program (gpu_check_test.sh runs the
real script with fake programs on PATH); and its readers of the runs' files on files made here."""

import contextlib
import datetime
import importlib.machinery
import importlib.util
import io
import json
import os
import tempfile
import time
import unittest
import unittest.mock

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gpu-check")
loader = importlib.machinery.SourceFileLoader("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(importlib.util.spec_from_loader("gpu_check", loader))
loader.exec_module(gpu_check)


class Answers(gpu_check.Runner):
    """A Runner that starts nothing: each program's status and output are the test's."""

    def __init__(self, answers):
        super().__init__()
        self.answers, self.asked = answers, []

    def run(self, limit, argv, output, env=None):
        self.asked.append(argv)
        status, text = self.answers.get(os.path.basename(argv[0]), (127, f"{argv[0]}: not found"))
        with open(output, "w") as stream:
            stream.write(text + "\n")
        return status


class NoGpu(unittest.TestCase):
    def check(self, answers):
        with tempfile.TemporaryDirectory() as folder:
            bundle = os.path.join(folder, "bundle")
            os.makedirs(bundle)
            environment = dict(os.environ, OUT=os.path.join(folder, "out"), PATH=folder)
            with open(os.path.join(folder, "nvidia-smi"), "w"):
                pass
            os.chmod(os.path.join(folder, "nvidia-smi"), 0o755)
            runner = Answers(answers)
            with unittest.mock.patch.dict(os.environ, environment, clear=True), \
                    contextlib.redirect_stdout(io.StringIO()):
                status = gpu_check.main([bundle], runner)
            with open(os.path.join(folder, "out", "summary.txt")) as stream:
                return status, stream.read(), runner.asked

    def test_the_driver_is_named_in_its_own_words(self):
        status, summary, asked = self.check({"nvidia-smi": (9, "NVIDIA-SMI has failed because it couldn't "
                                                               "communicate with the NVIDIA driver.")})
        self.assertEqual(status, 1)
        self.assertIn("no GPU: nvidia-smi failed (exit 9): NVIDIA-SMI has failed because", summary)
        self.assertIn("result: FAIL (nothing was measured)", summary)
        self.assertTrue(asked[0][1].startswith("--query-gpu="), asked)

    def test_a_hung_driver_is_an_answer(self):
        status, summary, _ = self.check({"nvidia-smi": (124, "")})
        self.assertEqual(status, 1)
        self.assertIn("no GPU: nvidia-smi did not answer in 30 s", summary)


class Runs(unittest.TestCase):
    """The real Runner: what a bounded run leaves behind."""

    def test_a_run_out_of_time_ends_with_all_it_started(self):
        with tempfile.TemporaryDirectory() as folder:
            script, log, pid_file = (os.path.join(folder, name) for name in ("kid.sh", "out.txt", "pid"))
            with open(script, "w") as stream:
                stream.write(f"sleep 300 &\necho $! >{pid_file}\nwait\n")
            self.assertEqual(gpu_check.Runner().run(0.3, ["bash", script], log), 124)
            with open(pid_file) as stream:
                child = int(stream.read())
            for _ in range(50):  # gone, or a zombie waiting for its new parent
                try:
                    with open(f"/proc/{child}/stat") as stream:
                        if stream.read().split(")")[-1].split()[0] == "Z":
                            break
                except FileNotFoundError:
                    break
                time.sleep(0.1)
            else:
                self.fail(f"the run's child {child} still runs after its run ended")

    def test_statuses_as_the_shell_gives_them(self):
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "out.txt")
            runner = gpu_check.Runner()
            runner.GRACE = 0.3
            self.assertEqual(runner.run(0.3, ["bash", "-c", "trap '' TERM; sleep 30"], log), 137)  # SIGTERM ignored
            self.assertEqual(runner.run(5, ["bash", "-c", "kill -SEGV $$"], log), 139)
            self.assertEqual(runner.run(5, [os.path.join(folder, "none")], log), 127)
            with open(log) as stream:
                self.assertIn("No such file", stream.read())


class Readers(unittest.TestCase):
    def test_the_window_opens_at_the_last_warmup_step(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "metrics.jsonl")
            with open(path, "w") as stream:
                stream.write(json.dumps({"kind": "run"}) + "\n")
                for step in range(1, 8):
                    stream.write(json.dumps({"kind": "train", "step": step, "loss": 1.0, "time": 100 + step / 2}) + "\n")
                stream.write('{"kind":"train","step":8,"lo')  # cut by the stop
            # Steps 3 to 7: 4 steps of 16 images in 2 s.
            self.assertEqual(gpu_check.trellis_window(path, 3, 16), ("32.0", "4", "2.00", "101.500", "103.500"))
            with self.assertRaisesRegex(ValueError, "the warm-up did not finish"):
                gpu_check.trellis_window(path, 9, 16)

    def test_ratios_and_samples(self):
        self.assertEqual((gpu_check.ratio("3000.0", "1500"), gpu_check.ratio("-", "1"), gpu_check.ratio("1", "0")),
                         ("2.00", "-", "-"))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "gpu.csv")
            with open(path, "w") as stream:
                stream.write("2026/01/01 10:00:00.000, 100, 10\n2026/01/01 10:00:01.000, 300, 90\n"
                             "garbage\n2026/01/01 10:00:02.000, 200, 70\n")
            start = datetime.datetime(2026, 1, 1, 10, 0, 1).timestamp()
            self.assertEqual(gpu_check.gpu_samples(path, str(start), str(start + 1)), ("300", "80"))
            self.assertEqual(gpu_check.gpu_samples(path, "-", "-"), ("300", "-"))


if __name__ == "__main__":
    unittest.main()
