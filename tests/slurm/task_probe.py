# SPDX-License-Identifier: Apache-2.0
# What one task of a step sees, as one JSON line: its node and ranks, the variables trellis
# and Slurm set, its CPUs, its memory policy, and which GPU device files (/dev/nvidiaN, by
# minor number) its device cgroup lets it open: ENXIO means allowed (no driver behind the
# node), EPERM denied.
import errno
import json
import os

PREFIXES = ("TRELLIS_", "CUDA_", "ROCR_", "NCCL_", "UCX_", "OMP_", "OMPI_MCA_btl", "SLURM_STEP_GPUS", "MASTER_",
            "TF_CONFIG", "SLURMD_TRES_BIND")
NAMES = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "GROUP_WORLD_SIZE"}


def opens(minor):
    try:
        os.close(os.open(f"/dev/nvidia{minor}", os.O_RDWR))
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


status = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in open("/proc/self/status")}
with open("/proc/self/numa_maps") as maps:
    policy = maps.readline().split()[1]  # default, prefer:N, bind:N
devices = sorted(int(name[6:]) for name in os.listdir("/dev") if name.startswith("nvidia") and name[6:].isdigit())
print(json.dumps({
    "node": os.environ.get("SLURMD_NODENAME"), "rank": int(os.environ.get("SLURM_PROCID", "0")),
    "local": int(os.environ.get("SLURM_LOCALID", "0")), "job": os.environ.get("SLURM_JOB_ID"),
    # Not the step's secret: the probes' lines are compared with plans and printed.
    "env": {k: v for k, v in os.environ.items() if (k.startswith(PREFIXES) or k in NAMES) and k != "TRELLIS_SECRET"},
    "cpus": status["Cpus_allowed_list"], "memory_policy": policy,
    "devices": {str(minor): opens(minor) for minor in devices},
}), flush=True)
