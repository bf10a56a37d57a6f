#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch gloo peer of trellis-bench allreduce: torch.distributed.all_reduce (float32
sum) on CPU tensors with the same sizes, iterations (TRELLIS_ALLREDUCE_ITERS timed, 1 warm-up)
and check. Rank and world size come from
RANK/WORLD_SIZE, the rendezvous from MASTER_ADDR/MASTER_PORT. Prints JSON lines on rank 0."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
iterations, warmup = int(os.environ.get("TRELLIS_ALLREDUCE_ITERS", "10")), 1
for size in map(int, sys.argv[1:]):
    count = size // 4
    pattern = (torch.arange(count) % 7 + 1).float()
    times = []
    for i in range(warmup + iterations):
        data = pattern * (rank + 1)
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(data)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    wrong = int((data != pattern * (n * (n + 1) // 2)).sum())
    times.sort()
    median = times[len(times) // 2]
    if rank == 0:
        print(json.dumps({"bytes": count * 4, "time_us": median * 1e6,
                          "busbw_gbs": count * 4 / median / 1e9 * 2 * (n - 1) / n, "wrong": wrong}), flush=True)
dist.destroy_process_group()
