# SPDX-License-Identifier: Apache-2.0
"""A run's key: the first 12 hex digits of the sha256 of its settings as canonical JSON
(sorted keys, no spaces, ASCII). Its folder is runs/<key>, so a run whose settings change
after an edit of the study is a new run in a new folder, never mixed with the old one."""

import hashlib
import json


def canonical_json(settings):
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def run_key(settings):
    return hashlib.sha256(canonical_json(settings).encode("ascii")).hexdigest()[:12]
