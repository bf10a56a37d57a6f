# SPDX-License-Identifier: Apache-2.0
"""The campaign folder (the layout trellis-report reads): campaign.json, and per run
runs/<key>/ with settings.json, run.sbatch, jobs (one Slurm job id a line), log/, bench/,
checkpoint/, slurm-<jobid>.out and exit_status. A failed run's folder is moved aside to
runs/<key>.failed-N before it starts again."""

import json
import os

from .runkey import canonical_json


class CampaignFolder:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.runs = os.path.join(self.path, "runs")
        self.campaign_json = os.path.join(self.path, "campaign.json")

    def run_dir(self, key):
        return os.path.join(self.runs, key)

    def read_campaign(self):
        """campaign.json as a dictionary, or None where the folder has none."""
        try:
            with open(self.campaign_json, encoding="utf-8") as stream:
                document = json.load(stream)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise OSError(f"{self.campaign_json}: not a campaign file: {error}") from None
        if not isinstance(document, dict) or document.get("kind") != "trellis-campaign":
            raise OSError(f"{self.campaign_json}: not a campaign file (its kind is not \"trellis-campaign\")")
        return document

    def write_campaign(self, document):
        write_atomically(self.campaign_json, json.dumps(document, indent=1, sort_keys=True) + "\n")

    def prepare_run(self, key, settings):
        run = self.run_dir(key)
        os.makedirs(os.path.join(run, "log"), exist_ok=True)
        write_atomically(os.path.join(run, "settings.json"), canonical_json(settings) + "\n")
        return run

    def exit_status(self, key):
        """The run's exit code as an int, None when it has none (never finished, or killed
        with its script), or the file's text when that is not a number."""
        try:
            with open(os.path.join(self.run_dir(key), "exit_status"), encoding="utf-8") as stream:
                text = stream.read().strip()
        except FileNotFoundError:
            return None
        return int(text) if text.lstrip("-").isdigit() else text

    def forget_exit_status(self, key):
        try:
            os.unlink(os.path.join(self.run_dir(key), "exit_status"))
        except FileNotFoundError:
            pass

    def jobs(self, key):
        try:
            with open(os.path.join(self.run_dir(key), "jobs"), encoding="utf-8") as stream:
                return [line.strip() for line in stream if line.strip()]
        except FileNotFoundError:
            return []

    def add_job(self, key, job):
        with open(os.path.join(self.run_dir(key), "jobs"), "a", encoding="utf-8") as stream:
            stream.write(job + "\n")

    def move_aside(self, key):
        """runs/<key> renamed to the first free runs/<key>.failed-N; returns the new path."""
        number = 1
        while os.path.exists(f"{self.run_dir(key)}.failed-{number}"):
            number += 1
        aside = f"{self.run_dir(key)}.failed-{number}"
        os.rename(self.run_dir(key), aside)
        return aside


def write_atomically(path, text):
    # A reader (trellis-report, a second trellis-campaign) sees the old file or the new one.
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
