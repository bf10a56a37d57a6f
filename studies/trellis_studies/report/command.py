# SPDX-License-Identifier: Apache-2.0
"""trellis-report -o OUTDIR RUN...: the figures, their tables, runs.csv and index.html of the
runs that trellis-train, trellis-bench and trellis-campaign left. `trellis-report predict ...`
hands over to the scaling predictor."""
import argparse
import os
import sys

from .jsonl import UnreadableRun

USAGE = "trellis-report -o OUTDIR RUN... | trellis-report predict ..."


def _predict(argv):
    try:
        from trellis_studies.predict.command import main as predict_main
    except ModuleNotFoundError as error:
        # Only a missing predictor is "not available"; a failing import inside it is its bug.
        if error.name not in ("trellis_studies.predict", "trellis_studies.predict.command"):
            raise
        print("trellis-report predict: not available", file=sys.stderr)
        return 2
    return predict_main(argv)


def _parser():
    parser = argparse.ArgumentParser(
        prog="trellis-report", usage=USAGE,
        description="Read trellis-train --log-dir folders, trellis-bench --log-dir folders and trellis-campaign "
                    "folders, and write OUTDIR/index.html, a PNG, SVG and CSV file per figure and OUTDIR/runs.csv.")
    parser.add_argument("-o", "--output", metavar="OUTDIR", required=True,
                        help="the report's folder (created; its files are replaced)")
    parser.add_argument("runs", metavar="RUN", nargs="+",
                        help="a trellis-train or trellis-bench --log-dir folder, or a trellis-campaign folder")
    return parser


def _short_names(runs):
    """A log folder's run is named by the end of its path, as much as tells it from the others
    (a campaign's runs are already named campaign/key)."""
    plain = [run for run in runs if not run.settings and run.name == os.path.normpath(run.folder)]
    parts = {id(run): os.path.abspath(run.folder).split(os.sep) for run in plain}
    for depth in range(1, 1 + max((len(p) for p in parts.values()), default=0)):
        names = {id(run): "/".join(parts[id(run)][-depth:]) for run in plain}
        if len(set(names.values())) == len(names):
            break
    for run in plain:
        run.name = names[id(run)]


def _read(arguments):
    from .runs import read_runs
    runs, notes, seen = [], [], set()
    for argument in arguments:
        found, left_out = read_runs(argument)
        notes.extend(left_out)
        for run in found:
            where = os.path.realpath(run.folder)
            if where not in seen:
                seen.add(where)
                runs.append(run)
        for run in found:
            notes.extend(run.notes)
    _short_names(runs)
    return runs, notes


def _write(outdir, runs, notes):
    from .figures import ALL
    from .figure import Figure
    from .html_page import write_index
    from .runs_csv import write_runs_csv
    os.makedirs(outdir, exist_ok=True)
    figures = []
    for module in ALL:
        figure = module.build(runs)
        figures.append(figure)
        if isinstance(figure, Figure):
            figure.write(outdir)
            print(figure.text())
        else:
            # A figure a previous report drew must not outlive its data.
            for suffix in ("png", "svg", "csv"):
                stale = os.path.join(outdir, f"{figure.name}.{suffix}")
                if os.path.exists(stale):
                    os.remove(stale)
            print(figure.line())
    write_runs_csv(os.path.join(outdir, "runs.csv"), runs)
    write_index(os.path.join(outdir, "index.html"), runs, figures, notes)


def main(argv):
    if argv and argv[0] == "predict":
        return _predict(argv[1:])
    try:
        options = _parser().parse_args(argv)
    except SystemExit as leaving:  # argparse: 2 after a usage error, 0 after --help
        return leaving.code
    try:
        runs, notes = _read(options.runs)
    except UnreadableRun as error:
        print(f"trellis-report: {error}", file=sys.stderr)
        return 1
    for note in notes:
        print(f"trellis-report: note: {note}", file=sys.stderr)
    try:
        _write(options.output, runs, notes)
    except OSError as error:
        print(f"trellis-report: {error.filename or options.output}: cannot write: {error.strerror}", file=sys.stderr)
        return 1
    print(f"trellis-report: wrote {os.path.join(options.output, 'index.html')} ({len(runs)} runs)")
    return 0
