#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trellis-topo from the outside: JSON shapes, the plan on a fixture, and bad input refused
# with exit status 2, one line on stderr and nothing on stdout.
set -u
topo=${TRELLIS_TOPO:?}
fixtures=${TRELLIS_FIXTURES:?}/topology
python=${PYTHON3:-python3}
failures=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error DESCRIPTION MESSAGE-PART ARGS...
expect_error() {
    local what=$1 message=$2
    shift 2
    "$topo" "$@" >"$out" 2>"$err"
    local status=$?
    [ "$status" -eq 2 ] || fail "$what: exit status $status, wanted 2"
    [ ! -s "$out" ] || fail "$what: printed on stdout: $(head -c 200 "$out")"
    [ "$(wc -l <"$err")" -eq 1 ] || fail "$what: wanted one line on stderr, got: $(cat "$err")"
    grep -qF -- "$message" "$err" || fail "$what: stderr lacks '$message': $(cat "$err")"
}

# json_check DESCRIPTION PYTHON-EXPRESSION-ON-j ARGS...
json_check() {
    local what=$1 expr=$2
    shift 2
    if ! "$topo" "$@" >"$out" 2>"$err"; then
        fail "$what: exit status $?: $(cat "$err")"
        return
    fi
    "$python" -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" "$out" ||
        fail "$what: JSON does not satisfy: $expr"
}

json_check "plan JSON on the 8-GPU fixture" \
    'j["host"]=="sw8" and j["policy"]=="closest" and len(j["tasks"])==8 and
     j["tasks"][3]["gpus"][0]["index"]==3 and j["tasks"][3]["hcas"][0]["name"]=="mlx5_3" and
     j["tasks"][3]["hcas"][0]["distance"]=="PIX" and j["tasks"][3]["cpus"]=="12-15" and
     j["tasks"][3]["numa"]==[0] and j["tasks"][3]["gdr"] is True and
     "NCCL_IB_HCA" not in j["tasks"][3]["env"] and j["tasks"][3]["env"]["UCX_NET_DEVICES"]=="mlx5_3:1" and
     j["tasks"][3]["env"]["CUDA_VISIBLE_DEVICES"]=="3" and j["tasks"][3]["gpus"][0]["device"]==3 and
     j["gpu_numbering"]=="node" and len(j["node_hcas"])==8 and j["hcas_restricted"] is False and
     j["tasks"][3]["hcas"][0]["netdev"]=="ib3"' \
    plan --tasks 8 --xml "$fixtures/two-level-switch-8gpu.xml" --json
json_check "plan numbered within the step, GPUs shared" \
    '[g["device"] for g in j["tasks"][1]["visible_gpus"]]==[1,0] and j["tasks"][1]["env"]["CUDA_VISIBLE_DEVICES"]=="1,0" and
     j["tasks"][1]["env"]["TRELLIS_GPU"]=="6" and j["gpu_numbering"]=="step"' \
    plan --tasks 2 --xml "$fixtures/two-level-switch-8gpu.xml" --allowed-gpus 5,6 --gpu-numbering step --share-gpus --json
json_check "plan with allowed sets" \
    'len(j["tasks"])==2 and j["tasks"][1]["cpus"]=="24-31" and [g["index"] for g in j["tasks"][1]["gpus"]]==[6,7]' \
    plan --tasks 2 --xml "$fixtures/two-level-switch-8gpu.xml" --allowed-gpus 4-7 --allowed-cpus 16-31 --json
json_check "explicit HCA" \
    'all(t["hcas"][0]["name"]=="mlx5_1" for t in j["tasks"])' \
    plan --tasks 2 --xml "$fixtures/down-port-2gpu.xml" --hca mlx5_1 --any-port-state --json
json_check "show JSON matrix" \
    'j["matrix"]["devices"][:2]==["GPU0","GPU1"] and j["matrix"]["distances"][0][1]=="PHB" and j["gpus"][1]["pci"]=="0000:02:00.0"' \
    show --xml "$fixtures/no-hca-2gpu.xml" --json
json_check "live show" 'j["this_machine"] is True and j["cpus"]!="" and "nvlinks" in j' show --json
json_check "live plan" 'len(j["tasks"])==1 and j["bind_cpus"] is True' plan --tasks 1 --json

"$topo" show --xml "$fixtures/two-level-switch-8gpu.xml" >"$out" 2>"$err" || fail "show table: $(cat "$err")"
grep -qE '^GPU0 +X +PIX +PXB' "$out" || fail "show table lacks the GPU0 row: $(head -5 "$out")"
grep -q '^NVLink: not known for this topology' "$out" || fail "show table does not say NVLink is unknown: $(tail -n 20 "$out")"
# The golden plans: each fixture's plan keeps every field and value it had (fields are only
# ever added). After a deliberate change: TRELLIS_UPDATE_GOLDEN=1 rewrites them.
golden=$fixtures/golden
while read -r name tasks; do
    case $name in '#'* | '') continue ;; esac
    # From the fixtures' folder, so that the file's name in the warnings is the same anywhere.
    (cd "$fixtures" && "$topo" plan --tasks "$tasks" --xml "$name.xml" --json) >"$out" 2>"$err" ||
        { fail "golden $name: $(cat "$err")"; continue; }
    if [ -n "${TRELLIS_UPDATE_GOLDEN:-}" ]; then cp "$out" "$golden/$name.plan.json"; continue; fi
    "$python" "$(dirname "$0")/golden_subset.py" "$golden/$name.plan.json" "$out" >"$err" ||
        fail "the plan of $name lost or changed fields of its golden file: $(head -n 5 "$err")"
done <"$golden/tasks"

"$topo" plan --tasks 2 --xml "$fixtures/down-port-2gpu.xml" >"$out" 2>"$err" || fail "plan table: $(cat "$err")"
grep -qE '^1 +1 +1 +mlx5_0:2 +SYS' "$out" || fail "plan table lacks task 1's row: $(cat "$out")"
grep -q '^NCCL: every task may use all HCAs (mlx5_0:2), NCCL_IB_HCA unset' "$out" || fail "plan table lacks the NCCL line: $(cat "$out")"
"$topo" --help >"$out" && grep -q 'trellis-topo plan --tasks N' "$out" || fail "--help"

expect_error "no command" "missing command"
expect_error "unknown command" "unknown command 'draw'" draw
expect_error "no --tasks" "plan needs --tasks N" plan --xml "$fixtures/no-hca-2gpu.xml"
expect_error "zero tasks" "invalid value '0' for --tasks (accepted: a whole number of at least 1)" plan --tasks 0
expect_error "text tasks" "invalid value 'two' for --tasks" plan --tasks two
expect_error "missing XML" "cannot read topology XML '/nonexistent.xml'" show --xml /nonexistent.xml
expect_error "not XML" "is not an hwloc XML topology" show --xml "$0"
expect_error "bad policy" "accepted: closest, none" plan --tasks 1 --policy nearest
expect_error "empty CPUs" "--allowed-cpus is empty" plan --tasks 1 --allowed-cpus ''
expect_error "bad CPUs" "bad CPU list" plan --tasks 1 --allowed-cpus 3-1x
expect_error "foreign CPUs" "contain none of" plan --tasks 1 --xml "$fixtures/no-hca-2gpu.xml" --allowed-cpus 64-65
expect_error "empty GPUs" "--allowed-gpus is empty" plan --tasks 1 --allowed-gpus ''
expect_error "missing GPU" "GPU 9 is not on nohca" plan --tasks 1 --xml "$fixtures/no-hca-2gpu.xml" --allowed-gpus 9
expect_error "unknown HCA" "HCA 'mlx5_7' is not on" plan --tasks 1 --xml "$fixtures/down-port-2gpu.xml" --hca mlx5_7
expect_error "bad HCA" "accepted: NAME or NAME:PORT" plan --tasks 1 --hca mlx5_0:zero
expect_error "unknown option" "unknown option '--frobnicate'" plan --tasks 1 --frobnicate
expect_error "misspelt option" "unknown option '--taks': did you mean --tasks?" plan --taks 1
expect_error "plan option on show" "belongs to 'plan'" show --tasks 2
expect_error "missing value" "needs a value" plan --tasks

if [ "$failures" -ne 0 ]; then
    echo "$failures trellis-topo check(s) failed"
    exit 1
fi
echo "all trellis-topo checks passed"
