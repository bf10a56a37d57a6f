#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# trellis-report on runs written by the test itself and on a real trellis-train run
# (report_test.py); skips where Python 3 with matplotlib is missing.
python=${PYTHON3:-python3}
studies=${TRELLIS_STUDIES_PYTHON:-$(dirname "$0")/..}
if ! "$python" -c 'import matplotlib' 2>/dev/null; then
    echo "SKIP: $python cannot import matplotlib (Debian: apt-get install python3-matplotlib)"
    exit 77
fi
# No __pycache__ in the source tree (read-only under distcheck).
PYTHONDONTWRITEBYTECODE=1; export PYTHONDONTWRITEBYTECODE
TRELLIS_STUDIES_PYTHON=$studies exec "$python" "$studies/tests/report_test.py" -v
