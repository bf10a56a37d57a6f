# SPDX-License-Identifier: Apache-2.0
"""What the studies commands do at their edges, written once: find their exit status, and end
quietly when the reader of their output has gone (`trellis-campaign status DIR | grep -q ...`)."""

import os
import sys


def run(main, argv):
    """main(argv)'s exit status; a closed output pipe ends the command without a traceback and
    with the status of a program killed by SIGPIPE, as the C programs end."""
    try:
        status = main(argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python flushes stdout again at exit; pointing it at /dev/null keeps that flush from
        # printing "Exception ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13
