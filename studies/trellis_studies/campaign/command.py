# SPDX-License-Identifier: Apache-2.0
"""trellis-campaign submit STUDY [--dir DIR] [--dry-run] [--sbatch-arg ARG]...
trellis-campaign status DIR"""

import argparse
import fcntl
import os
import sys

from . import builtin, slurm, study as studies
from .decide import ACTIVE, DONE, RESTART, RESUME, decide, failure_reason, state_words
from .folder import CampaignFolder
from .runkey import run_key
from .script import render
from .settings import StudyError

DESCRIPTION = """\
Writes a study's runs as sbatch scripts in a campaign folder, submits them to Slurm, and says
how they stand. STUDY is a TOML file or the name of a built-in study ({builtins}).
A second submit of the same campaign skips runs that are done (exit status 0) or still
queued or running, resumes runs that stopped with a checkpoint (75), and starts again
those that failed, their old folder moved aside (runs/KEY.failed-N)."""


class UsageError(Exception):
    """A command line naming what is not there: exit status 2, as argparse's own errors."""


def main(argv):
    parser = _parser()
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as exit:
        return exit.code
    try:
        if arguments.command == "submit":
            return submit(arguments)
        return status(arguments.dir)
    except UsageError as error:
        print(f"trellis-campaign: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # the reader of the output left: not an error of the campaign (cli.run ends quietly)
    except (StudyError, slurm.SlurmError, OSError) as error:
        print(f"trellis-campaign: {error}", file=sys.stderr)
        return 1


def _parser():
    parser = argparse.ArgumentParser(
        prog="trellis-campaign", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION.format(builtins=", ".join(builtin.names()) or "none found"))
    commands = parser.add_subparsers(dest="command", required=True, metavar="submit|status")
    submit_parser = commands.add_parser("submit", help="write the runs' scripts and submit those not done")
    submit_parser.add_argument("study", metavar="STUDY", help="a TOML file or a built-in study's name")
    submit_parser.add_argument("--dir", help="the campaign folder (default ./campaign-NAME)")
    submit_parser.add_argument("--dry-run", action="store_true", help="write the scripts, submit nothing")
    submit_parser.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                               help="one more sbatch argument for every job (repeatable)")
    status_parser = commands.add_parser("status", help="done / running / queued / failed / not submitted per run")
    status_parser.add_argument("dir", metavar="DIR", help="a campaign folder")
    return parser


def _study_path(name):
    if os.path.exists(name):
        return name
    found = builtin.path(name)
    if found is None:
        raise UsageError(f"{name}: neither a file nor a built-in study (built-in: "
                         f"{', '.join(builtin.names()) or 'none found'})")
    return found


def submit(arguments):
    path = _study_path(arguments.study)
    default_name = os.path.splitext(os.path.basename(path))[0]
    # A file's relative data paths are its folder's; a built-in study's, the current folder's.
    relative_to = None if os.path.exists(arguments.study) else os.getcwd()
    study = studies.read(path, default_name, slurm.partition_nodes, relative_to)
    folder = CampaignFolder(arguments.dir or f"campaign-{study.name}")
    previous = folder.read_campaign()
    if previous is not None and previous.get("name") != study.name:
        raise StudyError(f"{folder.path} holds campaign {previous.get('name')!r}, not {study.name!r}: "
                         f"choose another --dir")
    os.makedirs(folder.runs, exist_ok=True)
    # Two submits of one folder at once would both submit its runs: the second one stops.
    with open(os.path.join(folder.path, "campaign.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyError(f"{folder.path}: another trellis-campaign submit is at work in this folder") from None
        return _submit_runs(arguments, path, study, folder)


def _submit_runs(arguments, path, study, folder):
    records = [{"key": run_key(settings), "settings": settings, "jobs": []} for settings in study.runs]
    campaign = {"kind": "trellis-campaign", "name": study.name, "study": study.document, "runs": records}
    states = {} if arguments.dry_run or not any(folder.jobs(r["key"]) for r in records) else slurm.job_states()
    print(f"campaign {study.name} in {folder.path}: {len(records)} run(s) of {path}")
    submitted = 0
    for record in records:
        key, settings = record["key"], record["settings"]
        jobs = folder.jobs(key)
        exit_status = folder.exit_status(key)
        action = decide(exit_status, jobs, states.get(jobs[-1]) if jobs else None)
        record["jobs"] = jobs
        if action in (DONE, ACTIVE):
            print(f"  {key} {describe(settings)}: {'done' if action == DONE else 'job ' + jobs[-1] + ' not over'}, skipped")
            continue
        if action == RESTART and not arguments.dry_run:
            aside = folder.move_aside(key)
            reason = failure_reason(aside, exit_status, jobs, states.get(jobs[-1]) if jobs else None)
            print(f"  {key} failed ({reason}): moved aside to {os.path.basename(aside)}")
            jobs = record["jobs"] = []
        run = folder.prepare_run(key, settings)
        script = os.path.join(run, "run.sbatch")
        with open(script, "w", encoding="utf-8") as stream:
            stream.write(render(study, settings, key, run))
        os.chmod(script, 0o755)
        script_arguments = ["--resume"] if action == RESUME else []
        if arguments.dry_run:
            print(f"  {key} {describe(settings)}: {script} written (dry run: not submitted"
                  f"{', would resume' if action == RESUME else ''})")
            continue
        folder.forget_exit_status(key)
        try:
            job = slurm.submit(script, run, script_arguments, arguments.sbatch_arg)
        finally:
            folder.write_campaign(campaign)
        folder.add_job(key, job)
        record["jobs"] = jobs + [job]
        folder.write_campaign(campaign)
        submitted += 1
        print(f"  {key} {describe(settings)}: job {job}{' (resumed)' if action == RESUME else ''}")
    folder.write_campaign(campaign)
    print(f"{submitted} job(s) submitted")
    return 0


def status(path):
    folder = CampaignFolder(path)
    campaign = folder.read_campaign()
    if campaign is None:
        raise UsageError(f"{folder.campaign_json}: no such file ({path} is not a campaign folder)")
    states, unknown = {}, None
    try:
        if any(folder.jobs(record.get("key", "?")) for record in campaign.get("runs", [])):
            states = slurm.job_states()
    except slurm.SlurmError as error:
        states, unknown = {}, str(error)
        print(f"trellis-campaign: the jobs' states are unknown: {error}", file=sys.stderr)
    counts = {}
    print(f"campaign {campaign.get('name')} in {folder.path}")
    for record in campaign.get("runs", []):
        key = record.get("key", "?")
        jobs = folder.jobs(key)
        exit_status = folder.exit_status(key)
        job_state = states.get(jobs[-1]) if jobs else None
        words = state_words(exit_status, jobs, job_state)
        if unknown and jobs and exit_status is None:
            words = "unknown"
        counts[words] = counts.get(words, 0) + 1
        line = f"  {key} {words:<13} {describe(record.get('settings', {}))}"
        if jobs:
            line += f" job {jobs[-1]}"
        if words in ("failed", "stopped"):
            line += f": {failure_reason(folder.run_dir(key), exit_status, jobs, job_state)}"
        print(line)
    print(", ".join(f"{count} {words}" for words, count in sorted(counts.items())) or "no runs")
    return 0


def describe(settings):
    """A run in a few words: model, nodes x ranks, strategy, transport and what differs."""
    if not settings:
        return "(no settings)"
    strategy = settings.get("strategy", "?")
    if strategy == "ps":
        strategy += f" ({settings.get('ps_servers')} server(s))"
    elif settings.get("algorithm") not in (None, "", "auto"):
        strategy += f" {settings['algorithm']}"
    what = settings.get("benchmark") and f"bench {settings['benchmark']}" or settings.get("model", "?")
    words = [what, f"{settings.get('nodes')}x{settings.get('ranks_per_node')}", strategy,
             settings.get("transport", "?"), settings.get("precision", "?"), f"batch {settings.get('batch_size')}"]
    if settings.get("container"):
        words.append(f"container {settings['container']}")
    if settings.get("repetition", 1) != 1:
        words.append(f"repetition {settings['repetition']}")
    return " ".join(str(word) for word in words)
