# SPDX-License-Identifier: Apache-2.0
"""A study: a TOML file with a [run] table of settings shared by every run, a [matrix] table
of lists whose product gives the runs, a [slurm] table for the batch scripts and a [programs]
table naming the commands. Everything is checked when the file is read: an unknown key, a
value of the wrong type or a newline anywhere is an error naming the file, the key and what is
accepted, before any script is written."""

import itertools
import os
import re
import tomllib

from .settings import SETTINGS, StudyError, check_value, refuse_newlines, split_strategy

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# #SBATCH values that sbatch reads as one word: no blanks, quotes, backslashes or '#'.
SBATCH_WORD = re.compile(r"^[A-Za-z0-9._:/,+@%=-]+$")
SBATCH_OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9-]*(=[A-Za-z0-9._:/,+@%=*&|!-]*)?$")
POWERS_OF_2 = "powers-of-2"

TABLES = ("run", "matrix", "slurm", "programs")
TOP_LEVEL = ("name", "description") + TABLES
RUN_ONLY = ("repetitions",)
SLURM = {"partition": "a partition name", "time": "a time limit such as 00:30:00",
         "account": "an account name", "gres": "a --gres value such as gpu:8",
         "mpi": "srun's --mpi value (default pmix)",
         "options": "a list of more sbatch options, each one word such as --exclusive or --constraint=ib",
         "srun_options": "a list of more srun options, each one word"}
PROGRAMS = {"train": "the trellis-train command (default trellis-train)",
            "bench": "the trellis-bench command (default trellis-bench)"}


class Study:
    def __init__(self, path, name, description, document, runs, slurm, programs):
        self.path = path
        self.name = name
        self.description = description
        self.document = document   # the TOML as read, for campaign.json
        self.runs = runs           # a list of settings dictionaries, each run once
        self.slurm = slurm
        self.programs = programs


def read(path, name=None, partition_nodes=None, relative_to=None):
    """The study in the TOML file PATH. PARTITION_NODES(partition) gives the partition's node
    count for nodes = "powers-of-2" (called only then). A relative data path is taken from
    RELATIVE_TO (default: the folder of PATH)."""
    try:
        with open(path, "rb") as stream:
            document = tomllib.load(stream)
    except OSError as error:
        raise StudyError(f"{path}: cannot be read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise StudyError(f"{path}: not valid TOML: {error}") from None
    return from_document(path, document, name, partition_nodes, relative_to)


def from_document(path, document, name=None, partition_nodes=None, relative_to=None):
    _refuse_unknown(path, "the study", document, TOP_LEVEL)
    for table in TABLES:
        if not isinstance(document.get(table, {}), dict):
            raise StudyError(f"{path}: {table} must be a table ([{table}])")
    name = document.get("name", name)
    if not isinstance(name, str) or not NAME.match(name):
        raise StudyError(f"{path}: name = {name!r}: accepted: letters, digits, '.', '_' and '-'")
    description = document.get("description", "")
    if not isinstance(description, str):
        raise StudyError(f"{path}: description = {description!r}: accepted: a string")
    refuse_newlines(path, "description", description)
    slurm = _slurm(path, document.get("slurm", {}))
    programs = _programs(path, document.get("programs", {}))
    defaults, repetitions = _run_table(path, document.get("run", {}))
    matrix = _matrix_table(path, document.get("matrix", {}), slurm, partition_nodes)
    runs = expand(path, defaults, matrix, repetitions)
    base = relative_to or os.path.dirname(os.path.abspath(path))
    for settings in runs:
        settings["data"] = absolute_data(settings["data"], base)
    return Study(path, name, description, document, runs, slurm, programs)


def absolute_data(data, base):
    """DATA with its path made absolute against BASE: each job starts in its run's folder,
    where a relative path would name nothing the user meant."""
    if data == "synthetic":
        return data
    prefix = next((p for p in ("tfrecord:", "idx:") if data.startswith(p)), "")
    where = data[len(prefix):]
    return prefix + (where if os.path.isabs(where) else os.path.normpath(os.path.join(base, where)))


def expand(path, defaults, matrix, repetitions):
    """The product of the matrix's lists over the defaults, then each repetition; runs that
    come out the same (the strategy decides which of algorithm and ps_servers matter) once."""
    runs, seen = [], set()
    keys = list(matrix)
    for values in itertools.product(*(matrix[key] for key in keys)):
        settings = {key: SETTINGS[key].default for key in SETTINGS}
        settings.update(defaults)
        for key, value in zip(keys, values):
            settings[key] = value
        settings = _apply_strategy(path, settings)
        for repetition in range(1, repetitions + 1):
            run = dict(settings, repetition=repetition)
            canonical = tuple(sorted((k, repr(v)) for k, v in run.items()))
            if canonical not in seen:
                seen.add(canonical)
                runs.append(run)
    return runs


def _apply_strategy(path, settings):
    strategy, algorithm, servers = split_strategy(f"{path}: a run", settings["strategy"])
    settings["strategy"] = strategy
    if algorithm is not None:
        settings["algorithm"] = algorithm
    if servers is not None:
        settings["ps_servers"] = servers
    # The setting that the other strategy would use is cleared, so that it does not split
    # one run into several keys.
    if strategy == "allreduce":
        settings["ps_servers"] = 0
        if settings["algorithm"] == "":
            settings["algorithm"] = "auto"
    else:
        settings["algorithm"] = ""
        ranks = settings["nodes"] * settings["ranks_per_node"]
        if not 1 <= settings["ps_servers"] < ranks:
            raise StudyError(f"{path}: a ps run of {settings['nodes']} node(s) x {settings['ranks_per_node']} "
                             f"rank(s) with ps_servers = {settings['ps_servers']}: accepted: from 1 server "
                             f"to one less than the ranks (the others are the workers)")
    return settings


def _run_table(path, table):
    _refuse_unknown(path, "[run]", table, tuple(SETTINGS) + RUN_ONLY)
    defaults = {}
    for key, value in table.items():
        if key == "repetitions":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise StudyError(f"{path}: [run] repetitions = {value!r}: accepted: a positive number")
        elif key == "strategy":
            split_strategy(f"{path}: [run]", value)
            defaults[key] = value
        else:
            defaults[key] = check_value(f"{path}: [run]", key, value)
    return defaults, table.get("repetitions", 1)


def _matrix_table(path, table, slurm, partition_nodes):
    allowed = tuple(key for key in SETTINGS if SETTINGS[key].kind is not list)
    _refuse_unknown(path, "[matrix]", table, allowed)
    matrix = {}
    for key, values in table.items():
        where = f"{path}: [matrix]"
        if key == "nodes" and values == POWERS_OF_2:
            values = _powers_of_2(path, slurm, partition_nodes)
        if not isinstance(values, list) or not values:
            raise StudyError(f"{where} {key} = {values!r}: accepted: a non-empty list"
                             + (f' or "{POWERS_OF_2}"' if key == "nodes" else ""))
        if key == "strategy":
            for value in values:
                split_strategy(where, value)
            matrix[key] = values
        else:
            matrix[key] = [check_value(where, key, value) for value in values]
    return matrix


def _powers_of_2(path, slurm, partition_nodes):
    partition = slurm.get("partition", "")
    if partition_nodes is None:
        raise StudyError(f'{path}: [matrix] nodes = "{POWERS_OF_2}" needs the partition\'s size from sinfo')
    total = partition_nodes(partition)
    if total < 1:
        raise StudyError(f"{path}: [matrix] nodes = \"{POWERS_OF_2}\": partition "
                         f"{partition or '(the default)'} has no nodes")
    counts, count = [], 1
    while count <= total:
        counts.append(count)
        count *= 2
    return counts


def _slurm(path, table):
    _refuse_unknown(path, "[slurm]", table, tuple(SLURM))
    slurm = {}
    for key, value in table.items():
        where = f"{path}: [slurm] {key} = {value!r}: accepted: {SLURM[key]}"
        if key in ("options", "srun_options"):
            if not isinstance(value, list) or not all(isinstance(v, str) and SBATCH_OPTION.match(v) for v in value):
                raise StudyError(where)
        elif not isinstance(value, str) or not SBATCH_WORD.match(value):
            raise StudyError(where)
        slurm[key] = value
    return slurm


def _programs(path, table):
    _refuse_unknown(path, "[programs]", table, tuple(PROGRAMS))
    programs = {"train": "trellis-train", "bench": "trellis-bench"}
    for key, value in table.items():
        if not isinstance(value, str) or value == "":
            raise StudyError(f"{path}: [programs] {key} = {value!r}: accepted: {PROGRAMS[key]}")
        refuse_newlines(f"{path}: [programs]", key, value)
        programs[key] = value
    return programs


def _refuse_unknown(path, where, table, accepted):
    for key in table:
        if key not in accepted:
            raise StudyError(f"{path}: {where}: unknown key {key!r}: accepted: {', '.join(accepted)}")
