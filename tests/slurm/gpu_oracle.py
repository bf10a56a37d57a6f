# SPDX-License-Identifier: Apache-2.0
# Checks what tasks saw (task_probe.py lines) against the truth of the node, computed apart
# from trellis: a GPU's minor number from the cluster's copy of the NVIDIA driver table, its
# PCI address from the node's topology, which minors the task's device cgroup allows, and how
# CUDA numbers the GPUs it can open (in PCI order, as CUDA_DEVICE_ORDER=PCI_BUS_ID asks), and
# whether the task's NUMA node (its memory's and CPUs') is its first GPU's.
#   gpu_oracle.py CLUSTER_DIR TOPO PROBE_OUTPUT [--gpus N] [--allowed N] [--no-gpus] [--shared] [--slurm-visibility]
# --gpus: the GPUs trellis tells each task of; --allowed: those its device cgroup lets it open.
# Exits 1 naming every task that is wrong; else prints what each task saw.
import json
import os
import subprocess
import sys

cluster, topo, output = sys.argv[1:4]
flags = sys.argv[4:]
want_gpus = int(flags[flags.index("--gpus") + 1]) if "--gpus" in flags else None
want_allowed = int(flags[flags.index("--allowed") + 1]) if "--allowed" in flags else None


def node_facts(node):
    xml = os.path.join(cluster, "topology", node + ".xml")
    shown = json.loads(subprocess.run([topo, "show", "--json"] + (["--xml", xml] if os.path.exists(xml) else []),
                                      check=True, capture_output=True, text=True).stdout)
    pci_of = {g["index"]: g["pci"] for g in shown["gpus"]}
    numa_of = {g["index"]: g["numa"] for g in shown["gpus"]}
    minor_of = {}
    table = os.path.join(cluster, "nvidia", node, "gpus")
    for pci in os.listdir(table) if os.path.isdir(table) else []:
        for line in open(os.path.join(table, pci, "information")):
            if line.startswith("Device Minor:"):
                minor_of[pci] = int(line.split(":")[1])
    return pci_of, minor_of, numa_of


facts, problems = {}, []
tasks = [json.loads(line) for line in open(output) if line.startswith("{")]
if not tasks:
    problems.append("no task reported")
for task in tasks:
    node, env, who = task["node"], task["env"], f'{task["node"]} task {task["local"]} (rank {task["rank"]})'
    pci_of, minor_of, numa_of = facts.setdefault(node, node_facts(node))
    # The node's own device files only: the test nodes share this machine's /dev.
    allowed = sorted(int(m) for m, result in task["devices"].items()
                     if result != "EPERM" and int(m) in minor_of.values())
    own = [int(i) for i in env.get("TRELLIS_GPU", "").split(",") if i]
    own_minors = [minor_of[pci_of[i]] for i in own]
    if "--no-gpus" in flags:
        if own or "CUDA_VISIBLE_DEVICES" in env or allowed:
            problems.append(f"{who}: wanted no GPU, got TRELLIS_GPU={own}, "
                            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')}, allowed minors {allowed}")
        continue
    if want_gpus is not None and len(own) != want_gpus:
        problems.append(f"{who}: {len(own)} GPUs {own}, wanted {want_gpus}")
    if want_allowed is not None and len(allowed) != want_allowed:
        problems.append(f"{who}: its cgroup allows {len(allowed)} GPUs (minors {allowed}), wanted {want_allowed}")
    if not set(own_minors) <= set(allowed):
        problems.append(f"{who}: told GPUs {own} (minors {own_minors}), but its cgroup allows minors {allowed}")
    # Its memory (and CPUs) follow its first GPU: TRELLIS_NUMA names that GPU's NUMA node.
    numa = [n for n in env.get("TRELLIS_NUMA", "").split(",") if n]
    if own and numa_of.get(own[0], -1) >= 0 and numa[:1] != [str(numa_of[own[0]])]:
        problems.append(f"{who}: TRELLIS_NUMA={env.get('TRELLIS_NUMA')}, but its first GPU {own[0]} is on NUMA "
                        f"node {numa_of[own[0]]}")
    # CUDA's numbering inside the task: the devices it can open, in PCI order.
    pci_by_minor = {minor: pci for pci, minor in minor_of.items()}
    cuda_order = sorted(pci_by_minor[m] for m in allowed)
    listed = [int(d) for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
    if "--slurm-visibility" in flags:
        continue  # Slurm's --gpu-bind decides CUDA_VISIBLE_DEVICES
    if env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        problems.append(f"{who}: CUDA_DEVICE_ORDER={env.get('CUDA_DEVICE_ORDER')}")
    reached = [cuda_order[d] if d < len(cuda_order) else f"no device {d}" for d in listed]
    own_pcis = [pci_of[i] for i in own]
    if reached[:len(own)] != own_pcis:
        problems.append(f"{who}: CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')} reaches {reached} "
                        f"inside its cgroup, but its GPUs are {own_pcis}")
    if "--shared" in flags and sorted(reached) != cuda_order:
        problems.append(f"{who}: shared visibility lists {reached}, the step's GPUs are {cuda_order}")
    if "--shared" not in flags and len(listed) != len(own):
        problems.append(f"{who}: CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')} lists more than its GPUs")
for problem in problems:
    print("  " + problem)
if not problems:  # what each task saw, for the log
    print("; ".join(f'{t["node"]}/{t["local"]} GPU {t["env"].get("TRELLIS_GPU", "-")} '
                    f'CUDA {t["env"].get("CUDA_VISIBLE_DEVICES", "-")} '
                    f'minors {",".join(m for m, r in t["devices"].items() if r != "EPERM") or "-"}' for t in tasks))
sys.exit(1 if problems else 0)
