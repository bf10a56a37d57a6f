#!/usr/bin/python3
"""The PyTorch peer of trellis-train's benchmark: torchvision's ResNet on one synthetic batch,
SGD with momentum and weight decay, the same batch, image size and thread count. Prints the
per-step images/sec after the warmup steps and the peak resident memory."""
import argparse
import json
import resource
import time

import torch
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--model", default="resnet50")
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()

torch.set_num_threads(args.threads)
torch.manual_seed(1)
model = getattr(torchvision.models, args.model)(num_classes=1000)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * args.batch_size / 256, momentum=0.9, weight_decay=1e-4)
loss_fn = torch.nn.CrossEntropyLoss()
images = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
labels = torch.randint(0, 1000, (args.batch_size,))
model.train()
rates = []
for step in range(args.steps):
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()
    elapsed = time.perf_counter() - start
    if step >= args.warmup:
        rates.append(args.batch_size / elapsed)
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"torch": torch.__version__, "rates": rates, "peak_mib": peak_mib}))
