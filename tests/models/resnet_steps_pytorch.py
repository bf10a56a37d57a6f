#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The peer of tests/models/resnet_steps_test.sh: a CIFAR-style ResNet (resnet8/20/32/56: a 3x3
# stem of 16 channels, stages of basic blocks of 16, 32 and 64 channels, a 1x1 convolution and
# batch norm on the shortcut where the shape changes, global average pooling, a linear layer)
# written here in PyTorch in functional form, so that every tensor carries trellis's name.
# Reads what `zoo_export MODEL SIZE BATCH CLASSES 0 OUT STEPS LR` wrote (the parameters and
# running statistics before, each step's batch, an evaluation batch, and what trellis computed),
# trains the same steps with SGD (momentum 0.9, weight decay 1e-4 on the convolution and linear
# weights) in float64 and in float32, evaluates the last batch with the running statistics, and
# compares trellis's losses, evaluation, parameters and running statistics with them.
#   usage: resnet_steps_pytorch.py EXPORT.json   (the raw floats in EXPORT.bin)
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F
from zoo_pytorch import reader

torch.set_num_threads(2)
BLOCKS = {"resnet8": 1, "resnet20": 3, "resnet32": 5, "resnet56": 9}


def network(params, stats, blocks):
    """The forward pass over the named tensors; `training` picks batch or running statistics."""

    def conv_bn(x, name, stride, training, relu=True):
        weight = params[name + ".conv.weight"]
        y = F.conv2d(x, weight, None, stride, weight.shape[-1] // 2)
        y = F.batch_norm(y, stats[name + ".bn.running_mean"], stats[name + ".bn.running_var"],
                         params[name + ".bn.weight"], params[name + ".bn.bias"], training, 0.1, 1e-5)
        return F.relu(y) if relu else y

    def forward(x, training):
        x = conv_bn(x, "stem", 1, training)
        for stage in range(1, 4):
            for b in range(blocks):
                name = f"layer{stage}.{b}"
                stride = 2 if b == 0 and stage > 1 else 1
                main = conv_bn(conv_bn(x, name + ".1", stride, training), name + ".2", 1, training, relu=False)
                shortcut = conv_bn(x, name + ".downsample", stride, training, relu=False) \
                    if name + ".downsample.conv.weight" in params else x
                x = F.relu(main + shortcut)
        return F.linear(x.mean((2, 3)), params["fc.weight"], params["fc.bias"])

    return forward


def run(meta, raw, dtype):
    """The steps in PyTorch at `dtype`: (losses, evaluation loss and hits, parameters, statistics
    after), and `take`, which reads on from where the steps' inputs end."""
    take = reader(raw, dtype)
    n, size = meta["batch"], meta["image_size"]
    params = {p["name"]: take(p["shape"]).requires_grad_() for p in meta["parameters"]}
    stats = {s["name"]: take(s["shape"]) for s in meta["statistics"]}
    forward = network(params, stats, BLOCKS[meta["model"]])
    labels = torch.tensor(meta["labels"])
    weights = [p for p in params.values() if p.dim() > 1]
    others = [p for p in params.values() if p.dim() <= 1]
    optimizer = torch.optim.SGD([{"params": weights, "weight_decay": 1e-4}, {"params": others, "weight_decay": 0}],
                                lr=meta["lr"], momentum=0.9)
    losses = []
    for _ in range(meta["steps"]):
        images = take((n, size, size, 3)).permute(0, 3, 1, 2).contiguous()  # trellis feeds NHWC
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(forward(images, True), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    images = take((n, size, size, 3)).permute(0, 3, 1, 2).contiguous()
    with torch.no_grad():
        scores = forward(images, False)
        eval_loss = F.cross_entropy(scores, labels).item()
        hits = (scores.argmax(1) == labels).sum().item()
    return losses, (eval_loss, hits), {k: v.detach() for k, v in params.items()}, stats, take


def main():
    meta = json.load(open(sys.argv[1]))
    raw = np.fromfile(sys.argv[1][:-len(".json")] + ".bin", dtype=np.float32)
    # The reference is the run in float64; trellis's float32 run must be as close to it as
    # PyTorch's own float32 run is (within 3x its largest distance on any tensor of a kind), or
    # 1e-4, as tests/models/zoo_pytorch.py judges one step. Over several steps at batch 128 a
    # wrong layer, a residual join that adds the wrong tensor or statistics read in the wrong
    # layout are off by far more than rounding.
    torch.set_default_dtype(torch.float64)
    ref_losses, ref_eval, ref_params, ref_stats, _ = run(meta, raw, torch.float64)
    torch.set_default_dtype(torch.float32)
    peer_losses, peer_eval, peer_params, peer_stats, take = run(meta, raw, torch.float32)
    ours_params = {p["name"]: take(p["shape"]).double() for p in meta["parameters"]}
    ours_stats = {s["name"]: take(s["shape"]).double() for s in meta["statistics"]}

    def difference(a, b):  # relative L2 distance from the reference b
        return (a.double() - b).norm().item() / max(b.norm().item(), 1e-12)

    def worst(tensors, reference):
        return max((difference(v, reference[k]), k) for k, v in tensors.items())

    failures = []
    for kind, ours, peer, ref in (("parameters", ours_params, peer_params, ref_params),
                                  ("running statistics", ours_stats, peer_stats, ref_stats)):
        (mine, where), (theirs, _) = worst(ours, ref), worst(peer, ref)
        print(f"{kind} after {meta['steps']} steps, worst distance from float64's: trellis {mine:.2e} ({where}), "
              f"PyTorch float32 {theirs:.2e}")
        if mine > max(3 * theirs, 1e-4):
            failures.append(f"{kind}: trellis {mine:.2e} from float64's at {where}, PyTorch's float32 {theirs:.2e}")
    # Each loss, and the evaluation's, as close to float64's as PyTorch's float32 one, or 1e-4.
    def off(ours, peer, ref):
        return abs(ours - ref) > max(1e-4 * max(abs(ref), 1.0), 3 * abs(peer - ref))

    for step, (ours, peer, ref) in enumerate(zip(meta["losses"], peer_losses, ref_losses)):
        if off(ours, peer, ref):
            failures.append(f"loss at step {step}: trellis {ours:.6f}, PyTorch {peer:.6f} (float64 {ref:.6f})")
    print("losses: trellis " + " ".join(f"{x:.5f}" for x in meta["losses"]) + "; float64 " +
          " ".join(f"{x:.5f}" for x in ref_losses))
    print(f"evaluation with the running statistics: loss trellis {meta['eval_loss']:.6f} PyTorch {peer_eval[0]:.6f} "
          f"float64 {ref_eval[0]:.6f}; hits trellis {meta['eval_top1_hits']} float64 {ref_eval[1]} of {meta['batch']}")
    if off(meta["eval_loss"], peer_eval[0], ref_eval[0]):
        failures.append(f"evaluation loss: trellis {meta['eval_loss']:.6f}, PyTorch {peer_eval[0]:.6f} "
                        f"(float64 {ref_eval[0]:.6f})")
    if abs(meta["eval_top1_hits"] - ref_eval[1]) > 1:
        failures.append(f"evaluation hits: trellis {meta['eval_top1_hits']}, float64 {ref_eval[1]}")
    for f in failures:
        print("MISMATCH " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
