#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-check on this machine, which has no GPU: its command line (--help, bad options,
# a missing bundle, unknown sections), the no-GPU path with a fake nvidia-smi that answers
# as the real one does without a driver (as root and as an unprivileged user: summary.txt
# says "no GPU" in nvidia-smi's words, logs.tar.gz is there, OUT is honoured, exit 1), and,
# with a fake nvidia-smi that reports an H100 and fake bundle programs, the plumbing the
# device call depends on: the budget, a skip of layers_test counted as a failure, a bf16
# pair measured from fake runs, the speedups and fp16 sections alone, and a SIGTERM that still
# leaves the summary. A few seconds.
set -u
here=$(cd "$(dirname "$0")" && pwd)
check=$(cd "$here/../.." && pwd)/scripts/gpu-check
python=${PYTHON3:-python3}
work=$(mktemp -d /tmp/trellis-gpu-check-test.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# --- fakes -------------------------------------------------------------------------------
no_driver="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
mkdir -p "$work/no-driver" "$work/no-device" "$work/gpu"
printf '#!/bin/sh\necho "%s"\nexit 9\n' "$no_driver" >"$work/no-driver/nvidia-smi"
printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' >"$work/no-device/nvidia-smi"
# One H100: the query gpu-check starts with, and the samples it takes while a run goes on.
cat >"$work/gpu/nvidia-smi" <<'EOF'
#!/bin/bash
case " $* " in
    *" -lms "*) trap 'exit 0' TERM
                while :; do echo "$(date '+%Y/%m/%d %H:%M:%S.%3N'), 20480, 97"; sleep 0.1; done ;;
    *--query-gpu=*) echo "0, NVIDIA H100 80GB HBM3, 580.95.05, 81559 MiB, 1980 MHz, 2619 MHz, 700.00 W, P0, 31" ;;
    *) echo "fake nvidia-smi" ;;
esac
EOF
# A bundle whose programs behave as the real ones do where gpu-check reads them.
bundle=$work/bundle
mkdir -p "$bundle/bin" "$bundle/lib/trellis" "$bundle/tests/gpu"
cat >"$bundle/bin/trellis-train" <<'EOF'
#!/bin/bash
# metrics.jsonl records per step; SIGTERM stops after the step with status 75.
steps=100 log=.
while [ $# -gt 0 ]; do case $1 in --steps) steps=$2 ;; --log-dir) log=$2 ;; esac; shift; done
echo "Device:      cuda:0 NVIDIA H100 80GB HBM3 (fake); speed items: ${TRELLIS_CUDA_SPEEDUPS:-none}"
stop=0
trap 'stop=1' TERM
mkdir -p "$log"
for ((step = 1; step <= steps; step++)); do
    [ $stop = 1 ] && { echo "received signal 15 at step $((step - 1))"; exit 75; }
    sleep 0.02
    printf '{"kind":"train","loss":6.9,"step":%d,"time":%s}\n' "$step" "$EPOCHREALTIME" >>"$log/metrics.jsonl"
done
echo "total images/sec: 9000.00"
echo "peak GPU memory: 20000 MiB"
if [ -n "${TRELLIS_CUDA_PROFILE:-}" ]; then
    echo "GPU time by kind of work, ms per step over 17 steps (the first 3 left out):"
    echo "  convolution backward             41.00   60.0%"
    echo "  all profiled work                68.00"
    echo "  wall time per step               70.00  (the GPU idles, or works outside these spans, for the rest)"
fi
EOF
cat >"$bundle/bin/layers_test" <<'EOF'
#!/bin/sh
if [ "${FAKE_LAYERS:-}" = skip ]; then echo "SKIP: the GPU layer tests need a GPU: no GPU: none"; exit 77; fi
echo "ok:   convolution bf16: relative difference 1.0e-03 (tolerance 2e-02)"; echo "0 failure(s)"
EOF
for program in trellis-bench make_dataset; do printf '#!/bin/sh\nexit 1\n' >"$bundle/bin/$program"; done
touch "$bundle/lib/trellis/trellis-cuda.so" "$bundle/tests/gpu/learns_test.sh"
echo "trellis GPU bundle (fake)" >"$bundle/MANIFEST"
# A Python environment whose python3 plays the PyTorch peer and is python3 for the rest.
mkdir -p "$work/venv/bin"
cat >"$work/venv/bin/python3" <<EOF
#!/bin/bash
case "\${1:-}" in
    *pytorch_resnet_gpu.py)
        seconds=1
        while [ \$# -gt 0 ]; do [ "\$1" = --seconds ] && seconds=\$2; shift; done
        # Short sleeps, each waited for before a SIGTERM ends it: none is left behind.
        trap 'exit 143' TERM
        start=\$EPOCHREALTIME end=\$((SECONDS + seconds))
        while [ \$SECONDS -lt \$end ]; do sleep 0.1; done
        echo "{\"images_per_sec\": 3000.0, \"steps\": 12, \"seconds\": \$seconds, \"window_start\": \$start," \\
             "\"window_end\": \$EPOCHREALTIME, \"peak_mib\": 24000.0, \"torch\": \"2.11.0\", \"cudnn\": 91900}" ;;
    *) exec "$python" "\$@" ;;
esac
EOF
chmod 755 "$work"/*/nvidia-smi "$bundle"/bin/* "$work/venv/bin/python3"
tar -cJf "$work/bundle.tar.xz" -C "$bundle" .
echo "not xz" >"$work/broken.tar.xz"

# run NAME PATH_FIRST [OUT] -- ARGS...: gpu-check with the fake nvidia-smi of PATH_FIRST first
# on PATH, from the folder $work/NAME, OUT=$work/NAME/out unless OUT is "-" (unset); its
# status in $status, its output in $work/NAME/output.
run() {
    local name=$1 first=$2 out=$work/$1/out
    shift 2
    [ "$1" = - ] && { out=""; shift; }
    [ "$1" = -- ] && shift
    mkdir -p "$work/$name"
    (
        cd "$work/$name" || exit 1
        if [ -n "$out" ]; then export OUT=$out; else unset OUT; fi
        PATH="$first:$PATH" timeout 60 "$check" "$@"
    ) >"$work/$name/output" 2>&1
    status=$?
}
expect() {  # NAME STATUS WHAT
    [ "$status" -eq "$2" ] && return 0
    fail "$3: exit $status, expected $2; its output:"
    cat "$work/$1/output"
    return 1
}
says() {  # NAME FILE TEXT: FILE of that run holds TEXT
    grep -qF -- "$3" "$work/$1/$2"
}

# --- the command line --------------------------------------------------------------------
run help "$work/no-driver" -- --help
expect help 0 "--help" && grep -q "^usage: scripts/gpu-check BUNDLE" "$work/help/output" &&
    grep -q "versions.*layers.*bf16.*fp32.*speedups.*profile.*learns.*data.*fp16" <<<"$(tr '\n' ' ' <"$work/help/output")" &&
    pass "--help: the usage and every section, exit 0"
run no-bundle "$work/no-driver" -- --budget 10
expect no-bundle 2 "no BUNDLE" && says no-bundle output "name the BUNDLE" && pass "no BUNDLE: exit 2, asks for it"
run bad-option "$work/no-driver" -- "$bundle" --frobnicate
expect bad-option 2 "a bad option" && says bad-option output "unknown option '--frobnicate'" &&
    pass "a bad option: exit 2 naming it"
run missing "$work/no-driver" -- "$work/nowhere.tar.xz"
expect missing 2 "a missing bundle" && says missing output "'$work/nowhere.tar.xz' does not exist" &&
    pass "a missing bundle: exit 2 naming it"
run nosuch "$work/no-driver" -- "$bundle" --only layers,nosuch
expect nosuch 2 "--only nosuch" && says nosuch output "unknown section 'nosuch'" &&
    says nosuch output "versions,layers,bf16,fp32,speedups,profile,learns,data,fp16" && pass "--only nosuch: exit 2 naming the sections"
run bad-budget "$work/no-driver" -- "$bundle" --budget soon
expect bad-budget 2 "--budget soon" && says bad-budget output "--budget takes a whole number" &&
    pass "--budget soon: exit 2 naming the option"
for name in help no-bundle bad-option missing nosuch bad-budget; do
    [ ! -e "$work/$name/out" ] || fail "$name: the command line was refused but $work/$name/out was written"
done

# --- no GPU ------------------------------------------------------------------------------
# no_gpu_checks NAME WHO: the run NAME said "no GPU" in nvidia-smi's words in its OUT.
no_gpu_checks() {
    local name=$1 who=$2 out=$work/$1/out
    expect "$name" 1 "no GPU ($who)" || return
    [ -f "$out/summary.txt" ] || { fail "no GPU ($who): no summary.txt in OUT ($out)"; return; }
    says "$name" out/summary.txt "no GPU: nvidia-smi failed (exit 9): $no_driver" ||
        { fail "no GPU ($who): summary.txt lacks \"no GPU\" and nvidia-smi's message:"; cat "$out/summary.txt"; return; }
    tar -tzf "$out/logs.tar.gz" 2>/dev/null | grep -q "nvidia-smi.txt" ||
        { fail "no GPU ($who): logs.tar.gz is missing or lists no nvidia-smi.txt"; return; }
    [ ! -e "$work/$name/gpu-check-out" ] || { fail "no GPU ($who): wrote ./gpu-check-out although OUT was given"; return; }
    says "$name" output "no GPU" || { fail "no GPU ($who): nothing said on stdout"; return; }
    pass "no GPU ($who): exit 1, summary.txt says \"no GPU\" with nvidia-smi's message, logs.tar.gz lists, OUT honoured"
}
run no-gpu-root "$work/no-driver" -- "$bundle"
no_gpu_checks no-gpu-root "$(id -un)"

run default-out "$work/no-driver" - -- "$bundle"
expect default-out 1 "no GPU, OUT unset" && says default-out gpu-check-out/summary.txt "no GPU" &&
    [ -f "$work/default-out/gpu-check-out/logs.tar.gz" ] && pass "OUT unset: ./gpu-check-out/summary.txt and logs.tar.gz"

run no-device "$work/no-device" -- "$bundle"
expect no-device 1 "no device" && says no-device out/summary.txt "no GPU: nvidia-smi failed (exit 6): No devices were found" &&
    pass "nvidia-smi finding no device: \"no GPU\" with its message"

# The unprivileged half: a user made for the tests, as tests/container/launch_test.sh does.
# (Another test may make it at the same moment: then useradd fails and the user exists.)
user=trellistest
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP (half): not root: the no-GPU path ran as $(id -un) only, the root half needs root"
elif ! { id "$user" >/dev/null 2>&1 || useradd -M -s /bin/sh "$user" 2>/dev/null || id "$user" >/dev/null 2>&1; }; then
    echo "SKIP (half): no user $user and useradd cannot make one: the no-GPU path ran as root only"
elif ! setpriv --reuid="$user" --regid="$user" --init-groups test -x "$check"; then
    echo "SKIP (half): $user cannot run $check (a folder above it is closed to others): ran as root only"
else
    mkdir -p "$work/no-gpu-user"
    chown "$user" "$work/no-gpu-user"
    (cd "$work/no-gpu-user" && PATH="$work/no-driver:$PATH" OUT="$work/no-gpu-user/out" \
        setpriv --reuid="$user" --regid="$user" --init-groups timeout 60 "$check" "$bundle") >"$work/no-gpu-user/output" 2>&1
    status=$?
    no_gpu_checks no-gpu-user "$user"
    [ "$(stat -c %U "$work/no-gpu-user/out/summary.txt" 2>/dev/null)" = "$user" ] ||
        fail "no GPU ($user): summary.txt is not $user's"
fi

# --- a fake GPU: what the device call relies on ------------------------------------------
run budget "$work/gpu" -- "$work/bundle.tar.xz" --budget 0 --venv "$work/venv"
if expect budget 1 "--budget 0"; then
    skipped=$(grep -c "^== [a-z0-9]*: not run: budget" "$work/budget/out/summary.txt")
    if [ "$skipped" -eq 9 ] && says budget out/summary.txt "result: FAIL"; then
        pass "--budget 0 (unpacking the .tar.xz): every section \"not run: budget\", exit 1"
    else
        fail "--budget 0: $skipped of 9 sections \"not run: budget\":"
        cat "$work/budget/out/summary.txt"
    fi
fi

run broken "$work/gpu" -- "$work/broken.tar.xz"
expect broken 2 "a bundle that is no .tar.xz" && says broken output "cannot unpack BUNDLE '$work/broken.tar.xz'" &&
    pass "a bundle that does not unpack: exit 2 naming it"

run layers "$work/gpu" -- "$bundle" --only layers
expect layers 0 "layers_test passing" && says layers out/summary.txt "layers_test: 1 ok, 0 FAIL, exit 0" &&
    says layers out/summary.txt "result: PASS" && pass "--only layers, layers_test passing: exit 0"
FAKE_LAYERS=skip run layers-skip "$work/gpu" -- "$bundle" --only layers
expect layers-skip 1 "layers_test skipping" &&
    says layers-skip out/summary.txt "layers: FAIL: layers_test skipped (exit 77) on a machine with a GPU" &&
    pass "layers_test's skip (77) where nvidia-smi sees a GPU: a FAIL, exit 1"

run pair "$work/gpu" -- "$bundle" --only bf16,speedups --window 1 --warmup 2 --venv "$work/venv"
if expect pair 0 "the bf16 pair"; then
    row=$(grep -E "^bf16 +256 " "$work/pair/out/summary.txt" | tail -n 1)
    # Fake PyTorch: 3000 img/s, 12 steps; so fake trellis runs 2 + 12 steps, about 50 a second.
    read -r _ _ ours theirs ratio ours_mib _ theirs_mib _ ours_util theirs_util <<<"$row"
    if [ "$theirs" = 3000.0 ] && [ "$ratio" != - ] && [ "$ours_mib" = 20480 ] && [ "$theirs_mib" = 20480 ] &&
        [ "$ours_util" = 97 ] && [ "$theirs_util" = 97 ] && says pair out/summary.txt "over 12 steps" &&
        says pair out/summary.txt "20000 MiB by itself" && says pair out/summary.txt "bf16 target met" &&
        says pair out/summary.txt "with TRELLIS_CUDA_SPEEDUPS=all: " && says pair out/summary.txt "(without: $ours img/s; ratio"; then
        pass "a bf16 pair from fake runs: trellis $ours img/s against 3000, ratio $ratio, memory and utilisation of both; again with the speed items"
    else
        fail "the bf16 pair's figures are not the fakes':"
        cat "$work/pair/out/summary.txt"
    fi
fi

# section_alone SECTION WHAT TEXT...: gpu-check --only SECTION with the fakes passes and its
# summary.txt holds every TEXT.
section_alone() {
    local section=$1 what=$2 text
    shift 2
    run "$section" "$work/gpu" -- "$bundle" --only "$section" --window 1 --warmup 2 --venv "$work/venv"
    expect "$section" 0 "$what" || return
    for text in "$@"; do
        says "$section" out/summary.txt "$text" || { fail "$what: no '$text' in:"; cat "$work/$section/out/summary.txt"; return; }
    done
    pass "$what"
}
# The profile: the fake's table lands in summary.txt.
section_alone profile "the profile section: GPU time by kind of work and the wall time per step in summary.txt" \
    "convolution backward             41.00" "wall time per step"
# The speed items alone (no bf16 in the call): trellis without them, then with them, each
# over the window.
section_alone speedups "the speedups section alone: trellis timed without and with TRELLIS_CUDA_SPEEDUPS=all" \
    "without the speed items: " "with TRELLIS_CUDA_SPEEDUPS=all: "
# fp16 without, then with, the overflow flag read a step late; the second run was given the item.
section_alone fp16 "the fp16 section: trellis fp16 timed without and with TRELLIS_CUDA_SPEEDUPS=overflow-on-device" \
    "trellis fp16 batch 256: " "with TRELLIS_CUDA_SPEEDUPS=overflow-on-device: " "(without: " \
    "speed items: overflow-on-device"

# A SIGTERM (the device call's time running out) still leaves the summary and the logs.
mkdir -p "$work/term"
(cd "$work/term" && PATH="$work/gpu:$PATH" OUT="$work/term/out" exec "$check" "$bundle" --only bf16 --window 20 \
    --venv "$work/venv") >"$work/term/output" 2>&1 &
pid=$!
for _ in $(seq 1 50); do grep -q "^== bf16" "$work/term/out/summary.txt" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -TERM "$pid"
wait "$pid"
status=$?
if expect term 1 "SIGTERM" && says term out/summary.txt "stopped by SIGTERM" && says term output "stopped by SIGTERM" &&
    tar -tzf "$work/term/out/logs.tar.gz" >/dev/null 2>&1; then
    pass "SIGTERM during a section: exit 1, \"stopped by SIGTERM\" in summary.txt and on stdout, logs.tar.gz"
else
    fail "SIGTERM during a section did not leave its summary:"
    cat "$work/term/out/summary.txt" 2>/dev/null
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
