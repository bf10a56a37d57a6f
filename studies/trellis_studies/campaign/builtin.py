# SPDX-License-Identifier: Apache-2.0
"""The built-in studies, found by name: the TOML files installed to <pkgdatadir>/studies
(two folders above the installed package, <pkgdatadir>/python/trellis_studies), or in a
source tree, studies/examples beside the package."""

import os

import trellis_studies

# realpath: a build tree reaches the package through a link, and ".." is taken from its target.
PACKAGE = os.path.dirname(os.path.realpath(trellis_studies.__file__))
# In a source tree the first is the studies folder itself (no TOML files): the second is taken.
FOLDERS = (os.path.join(PACKAGE, "..", "..", "studies"), os.path.join(PACKAGE, "..", "examples"))


def folder():
    for candidate in FOLDERS:
        if os.path.isdir(candidate) and any(name.endswith(".toml") for name in os.listdir(candidate)):
            return os.path.normpath(candidate)
    return None


def names():
    where = folder()
    if where is None:
        return []
    return sorted(name[:-5] for name in os.listdir(where) if name.endswith(".toml"))


def path(name):
    """The file of the built-in study NAME, or None."""
    where = folder()
    if where is None or name not in names():
        return None
    return os.path.join(where, name + ".toml")
