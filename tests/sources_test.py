#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What every source file of the tree holds to, each rule a check that names the lines that
break it: its licence in an SPDX line at its top; comments and messages about the code itself
(no review file, review item or issue of this project, which a reader of the tree does not
have); the runs' JSON-lines files read by trellis_studies/report/jsonl.py alone."""

import os
import re
import subprocess
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# What bootstrap, configure and builds leave in a tree, and data that is no source.
SKIPPED_FOLDERS = {".git", "autom4te.cache", "build-aux", "m4", "fixtures"}
SKIPPED_FILES = {"configure", "aclocal.m4", "Makefile.in", "config.h.in", "config.status", "changelog"}
THIS = os.path.relpath(os.path.abspath(__file__), TOP)


def candidates(top):
    """The tracked files of a git checkout; in a tarball (no .git), every file but what
    bootstrap and configure made."""
    if os.path.exists(os.path.join(top, ".git")):
        try:
            listed = subprocess.run(["git", "-C", top, "ls-files", "-z"], capture_output=True, text=True)
        except OSError:  # no git on this machine: walked as a tarball is
            listed = None
        if listed and listed.returncode == 0:
            yield from (path for path in listed.stdout.split("\0")
                        if path and not set(path.split("/")[:-1]) & SKIPPED_FOLDERS)
            return
    for folder, folders, files in os.walk(top):
        # A build folder holds config.status.
        folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS
                            and not os.path.exists(os.path.join(folder, name, "config.status")))
        yield from (os.path.relpath(os.path.join(folder, name), top) for name in sorted(files))


def sources(top=TOP):
    """(path relative to TOP, text) of each text file that is a source of the tree."""
    for relative in candidates(top):
        path = os.path.join(top, relative)
        name = os.path.basename(relative)
        if name in SKIPPED_FILES or name.endswith(("~", ".md", ".png", ".svg", ".tsv")) or os.path.islink(path):
            continue
        try:
            with open(path, encoding="utf-8") as stream:
                text = stream.read()
        except (UnicodeDecodeError, OSError):
            continue  # a binary file
        yield relative, text


SPDX = "SPDX-License-Identifier: Apache-2.0"
CODE = (".cpp", ".hpp", ".cu", ".h", ".c", ".py", ".sh", ".mk", ".am", ".ac", ".toml", ".in", ".sbatch", ".map",
        ".1", ".5", ".7", ".8")


def licence(path, text):
    """A source without the SPDX line in its first three lines (a program's is under its #! line)."""
    head = text.split("\n")[:3]
    if (path.endswith(CODE) or head[0].startswith("#!")) and not any(SPDX in line for line in head):
        yield 1, head[0]


# A review file, or an item of one ("gpu.md B7", "trainer.md §1.2"), or a security review's
# item code used as a label ("H1: ...", "(M4)").
CITATIONS = [re.compile(r"reviews/[\w.-]*"),
             re.compile(r"\b[\w-]+\.md\s+(?:[A-Z]\d+\b|§)"),
             re.compile(r"(?:^|[\s\"'(])[HML]\d{1,2}(?:/[HML]\d{1,2})*:\s"),
             re.compile(r"\([HML]\d{1,2}(?:/[HML]\d{1,2})*\)")]
ISSUE = re.compile(r"\bissues?\s+#?\d+")


def citations(path, text):
    """Lines citing what the tree does not hold. An upstream project's issue is named with the
    project ("oneDNN issue 4845"); a bare "issue 33" is this project's."""
    for number, line in enumerate(text.split("\n"), start=1):
        if any(pattern.search(line) for pattern in CITATIONS):
            yield number, line
            continue
        for found in ISSUE.finditer(line):
            before = re.findall(r"[\w-]+", line[:found.start()])
            if not before or not re.search(r"[A-Z]", before[-1]):
                yield number, line
                break


# json.loads applied line by line, in a file that speaks of the runs' JSON-lines files.
LINE_PARSE = re.compile(r"map\(\s*json\.loads\b|json\.loads\(\s*(?:l|line|text|record|raw|row)\s*\)")
RUN_FILES = re.compile(r"\bmetrics\b|metrics\.jsonl|bench\.jsonl|trellis-bench|--log-dir")
READER = "studies/trellis_studies/report/jsonl.py"


def jsonl_readers(path, text):
    if path == READER or not RUN_FILES.search(text):
        return
    for number, line in enumerate(text.split("\n"), start=1):
        if LINE_PARSE.search(line):
            yield number, line


RULES = [(f"every source says its licence in its first lines ({SPDX})", licence),
         ("comments and messages cite no review file, review item or issue of this project", citations),
         (f"metrics.jsonl and bench.jsonl are read by {READER} alone (records_of, read_jsonl, parse)",
          jsonl_readers)]


def check(files):
    """The number of rules broken; each rule's verdict printed with the first lines that break it."""
    broken = 0
    for what, rule in RULES:
        found = [(path, number, line) for path, text in files if path != THIS for number, line in rule(path, text)]
        if found:
            broken += 1
            print(f"FAIL: {what}; here:")
            for path, number, line in found[:20]:
                print(f"    {path}:{number}: {line.strip()[:140]}")
        else:
            print(f"ok: {what}")
    return broken


def self_test():
    """Each rule finds what it is written for, so that a rule that cannot fail is seen."""
    def source(path, text):  # with its licence line, as the tree's sources have it
        return path, ("// " if path.endswith(("pp", ".cu")) else "# ") + SPDX + "\n" + text

    bad = [("i.sh", "#!/bin/sh\necho no licence\n"), source("a.cpp", "// as gpu.md B7 says\n"),
           source("b.sh", "# issue 33's figures\n"), source("c.py", "# see ../shared/reviews/x\n"),
           source("d.sh", 'pass "H1: fine"\n'), source("e.py", "# metrics.jsonl\nrows = [json.loads(l) for l in open(p)]\n")]
    good = [source("f.hpp", "// oneDNN issue 4845, fixed upstream\n"), source("g.py", "# metrics.jsonl\nx = json.loads(out)\n"),
            source("h.py", "rows = [json.loads(line) for line in open(tasks)]\n"), ("j.txt", "no code, no licence\n")]
    found = {path for path, text in bad + good for _, rule in RULES for _ in rule(path, text)}
    return found == {path for path, _ in bad}, found


def main():
    works, found = self_test()
    if not works:
        print(f"FAIL: the rules themselves: they found {sorted(found)} in their own examples")
        return 1
    return 1 if check(list(sources())) else 0


if __name__ == "__main__":
    sys.exit(main())
