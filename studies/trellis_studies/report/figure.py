# SPDX-License-Identifier: Apache-2.0
"""A figure of the report: its table (the CSV file and the text printed) and its drawing (PNG
and SVG files), or the reason it was skipped."""
import csv
import os

from .jsonl import json_text
from .plotting import pyplot


class Skipped:
    def __init__(self, name, reason):
        self.name = name
        self.reason = reason

    def line(self):
        return f"figure {self.name}: skipped (no runs with {self.reason})"


class Figure:
    """name: the files' base name; columns and rows: the table; draw(figure): matplotlib's
    drawing of it; notes: what a reader of the figure must know (shown and printed)."""

    def __init__(self, name, title, columns, rows, draw, notes=(), size=(7.5, 4.5)):
        self.name = name
        self.title = title
        self.columns = list(columns)
        self.rows = [list(row) for row in rows]
        self.draw = draw
        self.notes = list(notes)
        self.size = size

    def files(self):
        return [f"{self.name}.{suffix}" for suffix in ("png", "svg", "csv")]

    def write(self, outdir):
        with open(os.path.join(outdir, f"{self.name}.csv"), "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow(self.columns)
            writer.writerows([_csv_cell(value) for value in row] for row in self.rows)
        plt = pyplot()
        figure = plt.figure(figsize=self.size)
        try:
            self.draw(figure)
            figure.suptitle(self.title)
            figure.tight_layout()
            figure.savefig(os.path.join(outdir, f"{self.name}.png"), dpi=100)
            figure.savefig(os.path.join(outdir, f"{self.name}.svg"), metadata={"Date": None})
        finally:
            plt.close(figure)

    def text(self):
        cells = [self.columns] + [[_text_cell(value) for value in row] for row in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns))]
        lines = [f"figure {self.name}: {self.title}"]
        lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, float) and not hasattr(value, "text"):
        return repr(value)
    return json_text(value)


def _text_cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"
    return json_text(value)


def legend_text(text):
    """A label from a run as matplotlib should show it: a `$` would start mathtext; long labels
    are shortened."""
    text = str(text)
    text = text if len(text) <= 60 else text[:57] + "..."
    return text.replace("$", r"\$")


def integer_ticks(axes, values):
    """GPU counts as plain numbers, also on a log axis."""
    values = sorted(set(values))
    axes.set_xticks(values, [str(value) for value in values])
    axes.minorticks_off()
