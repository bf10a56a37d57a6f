# SPDX-License-Identifier: Apache-2.0
"""What a second `submit` does with each run, and what `status` says of it, from the run's
exit_status file, its last Slurm job and that job's state in squeue.

exit status 0: done, skipped. A job still queued or running: skipped. 75 (trellis-train
saved a checkpoint and stopped): submitted again with --resume, in the same folder. Any
other status, or none from a job that is over (killed with its script): failed, the folder
moved aside and the run started again. Never submitted: submitted."""

import os

from ..report.jsonl import UnreadableRun, records_of
from .slurm import ACTIVE_STATES, PENDING_STATES

DONE, ACTIVE, RESUME, RESTART, SUBMIT = "done", "active", "resume", "restart", "submit"
STOPPED_WITH_CHECKPOINT = 75


def decide(exit_status, jobs, job_state):
    """One of DONE, ACTIVE, RESUME, RESTART, SUBMIT. EXIT_STATUS: the run's exit_status (None
    when absent), JOBS: its job ids, JOB_STATE: its last job's squeue state (None when squeue
    no longer knows it)."""
    if exit_status == 0:
        return DONE
    if jobs and job_state in ACTIVE_STATES:
        return ACTIVE
    if exit_status == STOPPED_WITH_CHECKPOINT:
        return RESUME
    if not jobs and exit_status is None:
        return SUBMIT
    return RESTART


def state_words(exit_status, jobs, job_state):
    """The status command's word for a run."""
    if exit_status == 0:
        return "done"
    if jobs and job_state in ACTIVE_STATES:
        return "queued" if job_state in PENDING_STATES else "running"
    if exit_status == STOPPED_WITH_CHECKPOINT:
        return "stopped"
    if not jobs and exit_status is None:
        return "not submitted"
    return "failed"


def failure_reason(run_dir, exit_status, jobs, job_state):
    """Why a run failed or stopped, in the run's own words where it left any: the stop record
    of its metrics.jsonl, else the last error line of its last job's output."""
    if exit_status is None:
        what = f"no exit status (job {jobs[-1]} {job_state.lower() if job_state else 'gone'}: killed with its script?)"
    else:
        what = f"exit status {exit_status}"
    said = [_stop_record(os.path.join(run_dir, "log", "metrics.jsonl"))]
    if jobs:
        # Beside a stop record only a line that reads as an error adds anything (Slurm's
        # "CANCELLED", an out-of-memory kill); without one, the output's last line will do.
        said.append(_last_error_line(os.path.join(run_dir, f"slurm-{jobs[-1]}.out"), errors_only=said[0] is not None))
    said = "; ".join(words for words in said if words)
    return f"{what}: {said}" if said else what


def _stop_record(path):
    try:
        stops = records_of(path, "stop")
    except UnreadableRun:
        return None  # no log yet, or one the report would name; the job's output still speaks
    if not stops:
        return None
    record = stops[-1]
    words = [f"stopped by {record['signal']}" if record.get("signal") else "stopped"]
    if "step" in record:
        words.append(f"at step {record['step']}")
    return " ".join(words)


ERROR_WORDS = ("error", "cancelled", "killed", "failed", "stopping", "abort", "oom", "exceeded")


def _is_slurm_verdict(line):
    """slurmstepd's word on the whole job or step: "*** JOB 7 ON n1 CANCELLED AT ... ***" (also
    DUE TO TIME LIMIT, PREEMPTION, NODE FAILURE), "*** STEP 7.0 ON n1 CANCELLED ... ***"."""
    return ("*** JOB " in line or "*** STEP " in line) and line.endswith("***")


def _last_error_line(path, errors_only):
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            lines = [line.strip() for line in stream if line.strip()]
    except OSError:
        return None
    # Slurm's verdict first: the ranks' own last words ("received signal 15 ... stopping") may
    # reach the file after it, but they say what happened to them, not why.
    for line in reversed(lines):
        if _is_slurm_verdict(line):
            return line[:300]
    for line in reversed(lines):
        if any(word in line.lower() for word in ERROR_WORDS):
            return line[:300]
    return lines[-1][:300] if lines and not errors_only else None
