# SPDX-License-Identifier: Apache-2.0
# Whether a JSON document holds everything a golden one holds: every key with the same value,
# lists of the same length element by element; keys the golden file lacks are new fields, and
# allowed. Prints each difference by its path. usage: golden_subset.py GOLDEN ACTUAL
import json
import sys


def differences(golden, actual, path="$"):
    if isinstance(golden, dict):
        if not isinstance(actual, dict):
            yield f"{path}: an object became {type(actual).__name__}"
            return
        for key, value in golden.items():
            if key not in actual:
                yield f"{path}.{key}: removed"
            else:
                yield from differences(value, actual[key], f"{path}.{key}")
    elif isinstance(golden, list):
        if not isinstance(actual, list) or len(actual) != len(golden):
            yield f"{path}: {json.dumps(golden)} became {json.dumps(actual)}"
            return
        for index, (g, a) in enumerate(zip(golden, actual)):
            yield from differences(g, a, f"{path}[{index}]")
    elif golden != actual:
        yield f"{path}: {json.dumps(golden)} became {json.dumps(actual)}"


with open(sys.argv[1]) as g, open(sys.argv[2]) as a:
    found = list(differences(json.load(g), json.load(a)))
for line in found:
    print(line)
sys.exit(1 if found else 0)
