#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The C++ sources are as .clang-format says. Checked only with the clang-format major version
# the tree was formatted with (.clang-format names it): other versions format some constructs
# differently. Skips (77) without that version.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
want=$(sed -n 's/.*formatted with clang-format \([0-9][0-9]*\).*/\1/p' "$top/.clang-format" | head -n 1)
[ -n "$want" ] || { echo "FAIL: .clang-format does not name the clang-format version the tree was formatted with"; exit 1; }
major() { "$1" --version 2>/dev/null | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p'; }
tool=""
for candidate in "clang-format-$want" clang-format; do
    command -v "$candidate" >/dev/null && [ "$(major "$candidate")" = "$want" ] && { tool=$candidate; break; }
done
[ -n "$tool" ] || { echo "SKIP: clang-format $want is not installed (found: $(major clang-format || true)): apt-get install clang-format-$want"; exit 77; }

cd "$top" || exit 1
if [ -e .git ]; then
    sources=$(git ls-files '*.cpp' '*.hpp' '*.cu' '*.h' '*.c' | grep -v '^tests/fixtures/')
else
    # A tarball: its files, not those of the build (make distcheck builds in _build, installs in _inst).
    sources=$(find . \( -path ./tests/fixtures -o -path './_build*' -o -path ./_inst \) -prune -o -type f \
        \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.h' -o -name '*.c' \) -print | sed 's|^\./||')
fi
# clang-format --dry-run names each line it would change; two at once, a few seconds in all.
report=$(echo "$sources" | xargs -P 2 -n 50 "$tool" --style=file --dry-run --Werror 2>&1)
if [ -n "$report" ]; then
    echo "FAIL: not as .clang-format says ($tool; fix with: $tool -i --style=file FILE):"
    echo "$report" | grep -E '^[^ ].*: (error|warning):' | head -n 20
    exit 1
fi
echo "ok: $(echo "$sources" | wc -l) C++ sources as .clang-format says ($tool)"
