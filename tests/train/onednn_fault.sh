# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run trellis-train where a oneDNN may meet a CPU it dies on (Debian
# 13's oneDNN 3.7.2 dies of SIGFPE making convolutions on some AMD EPYC virtual machines):
# trellis-train then refuses every CPU run with one line, which these tests recognise by its
# words alone, never by the trainer having failed.
#   onednn_fault_signature         an extended regular expression for that line
#   onednn_fault_refusal CMD...    runs CMD (trellis-train, or a command that runs it) for one
#                                  synthetic step; prints the line and succeeds when CMD was
#                                  refused with it, prints nothing and fails otherwise
onednn_fault_signature='^trellis-train: (rank [0-9]+ \([^)]*\): )?refused: oneDNN [0-9]+\.[0-9]+\.[0-9]+ \(/[^)]*libdnnl[^)]*\) dies of SIGFPE \(an integer division by zero\) when it makes a convolution on this CPU \(.+\), so the CPU backend cannot run here; .*--device cuda'

onednn_fault_refusal() {
    local out status
    out=$("$@" --model resnet8 --batch-size 2 --steps 1 --threads 1 --data synthetic --device cpu 2>&1 >/dev/null)
    status=$?
    [ $status -eq 3 ] && grep -E "$onednn_fault_signature" <<<"$out"
}
