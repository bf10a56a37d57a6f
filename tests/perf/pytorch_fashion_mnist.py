#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch peer of trellis-train's time-to-accuracy run on Fashion-MNIST: the same CIFAR-style
ResNet (written here from trellis's layer list: a 3x3 stem of 16 channels, stages of basic blocks
of 16, 32 and 64 channels with a 1x1 convolution and batch norm on the shortcut where the shape
changes, global average pooling, a linear layer), the same initialisation (He normal by fan-out for
convolutions, uniform +-1/sqrt(fan-in) for the linear layer), SGD with momentum 0.9 and weight decay
1e-4 on weights only, the same learning rate and schedule, the same input (grey to three channels,
normalised by the training pixels' mean and deviation), the same augmentation (shifts of up to 4
pixels with black fill, horizontal flips), batch and evaluation points, and the same threads: a
DataLoader with one worker process (one thread) prepares batches ahead while --threads compute, as
trellis-train's --data-threads 1 --threads N do. Prints one JSON object per evaluation: step,
seconds since the first step (evaluations included), top1, top5."""
import argparse
import gzip
import json
import math
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
parser.add_argument("--model", default="resnet20")
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--lr", type=float, default=0.2, help="per 256 images")
parser.add_argument("--schedule", choices=["constant", "cosine"], default="cosine")
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--eval-every", type=int, required=True)
parser.add_argument("--target", type=float, default=2.0, help="stop once top-1 reaches it")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


train_x = read_idx(f"{args.data}/train-images-idx3-ubyte.gz").float() / 255
train_y = read_idx(f"{args.data}/train-labels-idx1-ubyte.gz").long()
test_x = read_idx(f"{args.data}/t10k-images-idx3-ubyte.gz").float() / 255
test_y = read_idx(f"{args.data}/t10k-labels-idx1-ubyte.gz").long()
mean, std = train_x.mean().item(), train_x.std(unbiased=False).item()
black = (0 - mean) / std
train_x = ((train_x - mean) / std).unsqueeze(1).expand(-1, 3, -1, -1).contiguous()
test_x = ((test_x - mean) / std).unsqueeze(1).expand(-1, 3, -1, -1).contiguous()


def augment(images):
    """Each image shifted by up to 4 pixels each way (black fill) and mirrored with p = 1/2."""
    n, _, h, w = images.shape
    padded = F.pad(images, (4, 4, 4, 4), value=black)
    dy = torch.randint(0, 9, (n,))
    dx = torch.randint(0, 9, (n,))
    out = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(n)])
    flip = torch.rand(n) < 0.5
    out[flip] = out[flip].flip(3)
    return out


def conv_bn(cin, cout, kernel, stride):
    conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False)
    nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
    return nn.Sequential(conv, nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a, self.b = conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, 1)
        self.shortcut = conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.b(F.relu(self.a(x))) + self.shortcut(x))


def resnet(blocks, classes=10):
    layers, channels = [conv_bn(3, 16, 3, 1), nn.ReLU()], 16
    for stage, width in enumerate([16, 32, 64]):
        for b in range(blocks):
            layers.append(Block(channels, width, 2 if b == 0 and stage > 0 else 1))
            channels = width
    fc = nn.Linear(channels, classes)
    bound = 1 / math.sqrt(channels)
    nn.init.uniform_(fc.weight, -bound, bound)
    nn.init.uniform_(fc.bias, -bound, bound)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), fc)


model = resnet({"resnet8": 1, "resnet20": 3, "resnet32": 5, "resnet56": 9}[args.model])
weights = [p for n, p in model.named_parameters() if p.dim() > 1]  # convolution and linear weights
others = [p for n, p in model.named_parameters() if p.dim() <= 1]
base_lr = args.lr * args.batch_size / 256
optimizer = torch.optim.SGD([{"params": weights, "weight_decay": 1e-4}, {"params": others, "weight_decay": 0}],
                            lr=base_lr, momentum=0.9)


def evaluate():
    model.eval()
    top1 = top5 = 0
    with torch.no_grad():
        for i in range(0, len(test_x), args.batch_size):
            scores = model(test_x[i:i + args.batch_size])
            labels = test_y[i:i + args.batch_size]
            # Other classes scoring at least as high as the label: a tie is a miss, as in trellis.
            higher = (scores >= scores.gather(1, labels[:, None])).sum(1) - 1
            top1 += (higher < 1).sum().item()
            top5 += (higher < 5).sum().item()
    model.train()
    return top1 / len(test_x), top5 / len(test_x)


class Batches(torch.utils.data.IterableDataset):
    """The steps' augmented batches in order: each epoch a new permutation, the last partial batch
    dropped (as trellis does)."""

    def __iter__(self):
        torch.set_num_threads(1)
        steps_per_epoch = len(train_x) // args.batch_size
        generator = torch.Generator().manual_seed(args.seed)
        order = torch.randperm(len(train_x), generator=generator)
        for step in range(args.steps):
            position = step % steps_per_epoch
            if position == 0 and step > 0:
                order = torch.randperm(len(train_x), generator=generator)
            index = order[position * args.batch_size:(position + 1) * args.batch_size]
            yield augment(train_x[index]), train_y[index]


loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=1, prefetch_factor=2)
step, started = 0, None
for images, labels in loader:
    if started is None:  # the clock starts with the first step, as trellis's does
        started = time.perf_counter()
    lr = base_lr if args.schedule == "constant" else base_lr * 0.5 * (1 + math.cos(math.pi * step / args.steps))
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()
    step += 1
    if step % args.eval_every == 0 or step == args.steps:
        top1, top5 = evaluate()
        print(json.dumps({"step": step, "seconds": time.perf_counter() - started, "top1": top1, "top5": top5}),
              flush=True)
        if top1 >= args.target:
            break
