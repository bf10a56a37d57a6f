# SPDX-License-Identifier: Apache-2.0
"""matplotlib, headless: the Agg backend, and a writable configuration folder where HOME is
not (CI runs as root without a home of its own; make check may run as a user without one)."""
import atexit
import os
import shutil
import tempfile

_pyplot = None


def _config_folder_usable():
    folder = os.environ.get("MPLCONFIGDIR") or os.path.join(os.path.expanduser("~"), ".config", "matplotlib")
    probe = folder
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    return bool(probe) and os.access(probe, os.W_OK)


def pyplot():
    global _pyplot
    if _pyplot is None:
        if not _config_folder_usable():
            folder = tempfile.mkdtemp(prefix="trellis-report-mpl-")
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            os.environ["MPLCONFIGDIR"] = folder
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "trellis-report"  # the same SVG for the same data
        import matplotlib.pyplot
        _pyplot = matplotlib.pyplot
    return _pyplot
