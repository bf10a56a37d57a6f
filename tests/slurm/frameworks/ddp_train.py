# SPDX-License-Identifier: Apache-2.0
# A PyTorch DistributedDataParallel training as users write it: init_method='env://' and
# nothing else, so every variable it needs must come from the environment (the plugin's
# wireup under plain srun, or trellis-agent launch). Prints one JSON line per rank: its
# identity and a digest of its parameters after a few steps, which must agree across ranks.
import hashlib
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1234 + rank)  # different starting weights: DDP's broadcast must align them
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
generator = torch.Generator().manual_seed(rank)  # each rank its own data
for _ in range(5):
    x = torch.randn(8, 16, generator=generator)
    y = torch.randint(0, 4, (8,), generator=generator)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
print(json.dumps({"rank": rank, "world": world, "local_rank": int(os.environ["LOCAL_RANK"]),
                  "node": os.environ.get("SLURMD_NODENAME", socket.gethostname()), "digest": digest}), flush=True)
dist.destroy_process_group()
