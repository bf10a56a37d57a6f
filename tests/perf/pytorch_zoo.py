#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of tests/perf/models_vs_pytorch and trainer_vs_pytorch: the same model as
trellis-train on one synthetic batch, SGD with momentum and weight decay, the same batch,
image size, classes and threads. tf_cnn_benchmarks' models are tests/models/zoo_pytorch.py's (written there from the
benchmark's layer lists); the ResNets are torchvision's (v1.5, trellis's resnet50/152).
Prints the per-step images/sec after the warmup steps and the peak resident memory. With
--seconds, it stops at the first step that ends after that many seconds (at --steps at the
latest, and not before two timed steps), as the benchmarks' trellis-train side does."""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import zoo_pytorch  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--batch-size", type=int, required=True)
parser.add_argument("--image-size", type=int, required=True)
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--seconds", type=float, default=None)
parser.add_argument("--warmup", type=int, default=1)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--classes", type=int, default=1001)
args = parser.parse_args()

torch.set_num_threads(args.threads)
torch.manual_seed(1)
classes = args.classes
images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
labels = torch.randint(0, classes, (args.batch_size,))

if args.model in zoo_pytorch.MODELS:
    build, batch_norm = zoo_pytorch.MODELS[args.model]
    params, stats = zoo_pytorch.Fresh(), zoo_pytorch.Fresh()
    net = zoo_pytorch.Net(params, stats, {"dropout_seed": 1, "dropout_draw": 0}, 3, batch_norm=batch_norm)
    build(net, classes)
    forward = lambda x: net(x, True)  # noqa: E731
    with torch.no_grad():
        forward(images)  # makes the parameters
    learned = [p for p in params.values() if p.requires_grad]
else:
    model = getattr(torchvision.models, args.model)(num_classes=classes)
    model.train()
    forward, learned = model, list(model.parameters())

optimizer = torch.optim.SGD(learned, lr=0.01, momentum=0.9, weight_decay=1e-4)
rates = []
began = time.perf_counter()
for step in range(args.steps):
    if args.seconds is not None and len(rates) >= 2 and time.perf_counter() - began > args.seconds:
        break
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(forward(images), labels)
    loss.backward()
    optimizer.step()
    elapsed = time.perf_counter() - start
    if step >= args.warmup:
        rates.append(args.batch_size / elapsed)
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"torch": torch.__version__, "rates": rates, "peak_mib": peak_mib}))
