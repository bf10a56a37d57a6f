# SPDX-License-Identifier: Apache-2.0
"""One run's batch script: #SBATCH lines (values checked by the study reader to be single
words), then one srun of trellis-train (or trellis-bench) whose every argument is
shell-quoted, then the run's exit status written to its folder. The script takes one
optional argument, --resume, which the campaign passes when a run stopped with a checkpoint
(exit 75) is submitted again."""

import shlex


def train_arguments(settings, run):
    """trellis-train's argument list for the settings of a run in folder RUN."""
    arguments = ["--model", settings["model"], "--batch-size", str(settings["batch_size"]),
                 "--steps", str(settings["steps"]), "--data", settings["data"],
                 "--strategy", settings["strategy"], "--transport", settings["transport"]]
    if settings["image_size"]:
        arguments += ["--image-size", str(settings["image_size"])]
    if settings["precision"] != "fp32":
        arguments += ["--precision", settings["precision"]]
    if settings["strategy"] == "ps":
        arguments += ["--ps-servers", str(settings["ps_servers"])]
    else:
        arguments += ["--allreduce-algorithm", settings["algorithm"]]
    if settings["threads"]:
        arguments += ["--threads", str(settings["threads"])]
    if settings["eval_every"]:
        arguments += ["--eval-every", str(settings["eval_every"])]
    if settings["target_accuracy"]:
        arguments += ["--target-accuracy", repr(settings["target_accuracy"])]
    arguments += list(settings["extra_args"])
    arguments += ["--log-dir", f"{run}/log", "--checkpoint-dir", f"{run}/checkpoint"]
    return arguments


def bench_arguments(settings, run):
    """trellis-bench's argument list for a benchmark run in folder RUN."""
    arguments = [settings["benchmark"], "--sizes", settings["bench_sizes"], "--transport", settings["transport"]]
    if settings["benchmark"] == "allreduce":
        arguments += ["--allreduce-algorithm", settings["algorithm"] or "auto"]
    if settings["benchmark"] == "ps":
        arguments += ["--ps-servers", str(max(settings["ps_servers"], 1))]
    arguments += list(settings["extra_args"])
    arguments += ["--log-dir", f"{run}/bench"]
    return arguments


def sbatch_lines(study, settings, key):
    slurm = study.slurm
    lines = [f"--job-name={study.name}-{key}", f"--nodes={settings['nodes']}",
             f"--ntasks-per-node={settings['ranks_per_node']}"]
    for option, flag in (("partition", "--partition"), ("time", "--time"), ("account", "--account"),
                         ("gres", "--gres")):
        if slurm.get(option):
            lines.append(f"{flag}={slurm[option]}")
    lines += slurm.get("options", [])
    return [f"#SBATCH {line}" for line in lines]


def srun_command(study, settings, run):
    srun = ["srun", f"--mpi={study.slurm.get('mpi', 'pmix')}"] + list(study.slurm.get("srun_options", []))
    if settings["container"]:
        srun.append(f"--trellis-image={settings['container']}")
    if settings["benchmark"]:
        program = [study.programs["bench"]] + bench_arguments(settings, run)
    else:
        program = [study.programs["train"]] + train_arguments(settings, run)
    return srun + program


def render(study, settings, key, run):
    """The text of RUN/run.sbatch."""
    described = ", ".join(f"{name}={settings[name]!r}" for name in sorted(settings))
    command = srun_command(study, settings, run)
    # One argument a line: the long commands stay readable.
    words = [shlex.quote(word) for word in command]
    srun_text = " \\\n    ".join([" ".join(words[:2])] + _group_options(words[2:]))
    resume = "" if settings["benchmark"] else ' "${resume[@]}"'
    return "\n".join([
        "#!/bin/bash",
        f"# trellis-campaign: run {key} of study {study.name}, written from {study.path}.",
        f"# Settings: {described}",
        "# Submitted from its own folder; its argument --resume continues from the newest checkpoint",
        "# (trellis-campaign passes it when the run stopped with one, exit status 75).",
        *sbatch_lines(study, settings, key),
        "",
        f"run={shlex.quote(run)}",
        "resume=()",
        '[ "${1:-}" = --resume ] && resume=(--resume)',
        'rm -f "$run/exit_status"',
        srun_text + resume,
        "status=$?",
        "# Written once the step is over (then renamed, so that a reader never sees half of it): a",
        "# job killed with its script leaves none, which trellis-campaign reads as failed.",
        'echo "$status" >"$run/exit_status.tmp" && mv "$run/exit_status.tmp" "$run/exit_status"',
        'exit "$status"',
        ""])


def _group_options(words):
    """Words grouped as "--option value" pairs where a value follows an option."""
    groups, index = [], 0
    while index < len(words):
        if words[index].startswith("--") and "=" not in words[index] and index + 1 < len(words) \
                and not words[index + 1].startswith("--"):
            groups.append(f"{words[index]} {words[index + 1]}")
            index += 2
        else:
            groups.append(words[index])
            index += 1
    return groups
