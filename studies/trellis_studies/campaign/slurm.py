# SPDX-License-Identifier: Apache-2.0
"""What the campaign asks Slurm: the partition's size (sinfo), the state of its jobs
(squeue), and a submission (sbatch --parsable)."""

import subprocess

# squeue states of a job that is not over yet: its run is left alone.
PENDING_STATES = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD")
ACTIVE_STATES = PENDING_STATES + ("CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING",
                                  "SIGNALING", "STAGE_OUT", "STOPPED")


class SlurmError(Exception):
    pass


def _run(command, cwd=None):
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SlurmError(f"{command[0]}: not found (trellis-campaign runs on a Slurm submission host)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(command)}: no answer in 60 s") from None
    if result.returncode != 0:
        raise SlurmError(f"{' '.join(command)} failed with status {result.returncode}: "
                         f"{result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def partition_nodes(partition):
    """The number of nodes of PARTITION ("" for the default partition)."""
    if partition:
        lines = _run(["sinfo", "-h", "-p", partition, "-o", "%D"]).split()
        return sum(int(count) for count in lines if count.isdigit())
    total = 0
    for line in _run(["sinfo", "-h", "-o", "%P %D"]).splitlines():
        name, _, count = line.partition(" ")
        if name.endswith("*") and count.strip().isdigit():
            total += int(count)
    return total


def job_states():
    """{job id: state} of the jobs squeue knows (finished ones stay for MinJobAge)."""
    states = {}
    for line in _run(["squeue", "-h", "-o", "%i %T"]).splitlines():
        job, _, state = line.strip().partition(" ")
        if job:
            states[job] = state.strip()
    return states


def submit(script, run_dir, script_arguments=(), sbatch_arguments=()):
    """The job id of SCRIPT submitted from RUN_DIR (its slurm-<jobid>.out lands there)."""
    output = _run(["sbatch", "--parsable", *sbatch_arguments, script, *script_arguments], cwd=run_dir)
    job = output.strip().split(";")[0]
    if not job.isdigit():
        raise SlurmError(f"sbatch --parsable {script}: not a job id: {output.strip()!r}")
    return job
