#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of trellis-train on the GPU: torchvision's ResNet-50, channels_last,
torch.autocast in bf16 or fp16 (or fp32 with TF32 allowed), SGD with momentum, one synthetic
batch on the device. After the warmup steps it times either --steps steps or, with --seconds,
as many steps as fit in that window. Prints one JSON object: images/sec, the steps and seconds
they were measured over, the window's wall-clock start and end (so that GPU samples taken
outside, e.g. nvidia-smi's utilisation, can be matched to it) and the peak GPU memory
(max_memory_reserved, the allocator's footprint; max_memory_allocated too)."""
import argparse
import json
import time

import torch
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=256)
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="bf16")
parser.add_argument("--steps", type=int, default=30, help="timed steps (unless --seconds)")
parser.add_argument("--seconds", type=float, help="time as many steps as fit in this window instead")
parser.add_argument("--warmup", type=int, default=10)
args = parser.parse_args()

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device = torch.device("cuda")
model = torchvision.models.resnet50(num_classes=1000).to(device, memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * args.batch_size / 256, momentum=0.9, weight_decay=1e-4)
loss_fn = torch.nn.CrossEntropyLoss()
images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device).to(
    memory_format=torch.channels_last)
labels = torch.randint(0, 1000, (args.batch_size,), device=device)
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.precision]
try:  # torch.amp.GradScaler since PyTorch 2.3; torch.cuda.amp's is deprecated there
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
except AttributeError:
    scaler = torch.cuda.amp.GradScaler(enabled=args.precision == "fp16")
model.train()


def step():
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=dtype, enabled=args.precision != "fp32"):
        loss = loss_fn(model(images), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


for _ in range(args.warmup):
    step()
# The clock starts and stops against finished work; in between the host queues steps ahead of
# the GPU as it does in training (nothing reads the loss), so the last step's wait is counted.
torch.cuda.synchronize()
window_start, started = time.time(), time.perf_counter()
steps = 0
while (time.perf_counter() - started < args.seconds) if args.seconds else steps < args.steps:
    step()
    steps += 1
torch.cuda.synchronize()
seconds = time.perf_counter() - started
print(json.dumps({"images_per_sec": args.batch_size * steps / seconds,
                  "steps": steps, "seconds": seconds, "warmup": args.warmup, "batch": args.batch_size,
                  "window_start": window_start, "window_end": window_start + seconds,
                  "peak_mib": torch.cuda.max_memory_reserved() / 2**20,
                  "allocated_mib": torch.cuda.max_memory_allocated() / 2**20,
                  "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                  "device": torch.cuda.get_device_name()}))
