# SPDX-License-Identifier: Apache-2.0
"""index.html: the figures and the runs' settings on one static page (no script, nothing
fetched). Everything that comes from a run passes through html.escape."""
import html

from .figure import Figure
from .jsonl import json_text
from .runs_csv import run_fields

RUN_FIELDS = ["model", "ranks", "nodes", "ranks_per_node", "global_batch", "batch_size", "strategy", "transport",
              "algorithm", "allreduce_algorithm", "ps_servers", "servers", "precision", "device", "steps",
              "benchmark", "hostname"]
STYLE = """body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; }
img { max-width: 100%; }
.note { color: #555; }"""


def _e(value):
    return html.escape(json_text(value) if value is not None else "", quote=True)


def _figure_section(figure):
    if not isinstance(figure, Figure):
        return f'<p class="note">{_e(figure.line())}</p>'
    name = _e(figure.name)
    parts = [f'<h2 id="{name}">{_e(figure.title)}</h2>',
             f'<p><img src="{name}.svg" alt="{_e(figure.title)}"></p>',
             f'<p>Files: <a href="{name}.png">{name}.png</a>, <a href="{name}.svg">{name}.svg</a>, '
             f'<a href="{name}.csv">{name}.csv</a></p>']
    parts += [f'<p class="note">{_e(note)}</p>' for note in figure.notes]
    return "\n".join(parts)


def _runs_table(runs):
    settings_names = sorted({name for run in runs for name in run.settings})
    record_names = [name for name in RUN_FIELDS if name not in settings_names
                    and any(name in run_fields(run) for run in runs)]
    header = ["run"] + settings_names + record_names + ["total_images_per_sec"]
    rows = []
    for run in runs:
        fields = run_fields(run)
        total = run.totals.get("total_images_per_sec") if run.totals else None
        cells = [run.name] + [run.settings.get(n) for n in settings_names] + [fields.get(n) for n in record_names]
        rows.append("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells + [total]) + "</tr>")
    head = "<tr>" + "".join(f"<th>{_e(name)}</th>" for name in header) + "</tr>"
    return "<table>\n" + head + "\n" + "\n".join(rows) + "\n</table>"


def write_index(path, runs, figures, notes):
    body = ["<h1>trellis report</h1>",
            f"<p>{len(runs)} run{'s' if len(runs) != 1 else ''}; the table of every run: "
            '<a href="runs.csv">runs.csv</a>.</p>']
    body += [_figure_section(figure) for figure in figures]
    body += ["<h2>Runs</h2>", _runs_table(runs)]
    if notes:
        body += ["<h2>Notes</h2>", "<ul>"] + [f"<li>{_e(note)}</li>" for note in notes] + ["</ul>"]
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>trellis report</title>\n"
            f"<style>\n{STYLE}\n</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(page)
