#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of trellis-bench data: torchvision's ImageFolder with the standard ImageNet
training transforms (RandomResizedCrop, RandomHorizontalFlip, ToTensor, Normalize) through a
DataLoader with --workers worker processes, batches of --batch-size. Prints images/sec over the
timed batches after the warm-up ones, as JSON."""
import argparse
import json
import time

import torch
import torchvision
import torchvision.transforms as T

parser = argparse.ArgumentParser()
parser.add_argument("--folder", required=True, help="the image folder's training split")
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--workers", type=int, default=1)
parser.add_argument("--batches", type=int, default=20)
parser.add_argument("--warmup", type=int, default=3)
args = parser.parse_args()
torch.set_num_threads(1)

transform = T.Compose([T.RandomResizedCrop(args.image_size), T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
dataset = torchvision.datasets.ImageFolder(args.folder, transform=transform)
loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                     drop_last=True, persistent_workers=True)
batches = iter(loader)
epoch_left = len(loader)


def next_batch():
    global batches, epoch_left
    if epoch_left == 0:
        batches, epoch_left = iter(loader), len(loader)
    epoch_left -= 1
    return next(batches)


for _ in range(args.warmup):
    next_batch()
started, images = time.perf_counter(), 0
for _ in range(args.batches):
    images += len(next_batch()[1])
rate = images / (time.perf_counter() - started)
print(json.dumps({"torch": torch.__version__, "torchvision": torchvision.__version__, "workers": args.workers,
                  "images_per_sec": rate}))
