#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The peer of tests/models/zoo_pytorch_test.sh: tf_cnn_benchmarks' AlexNet, VGG16, GoogLeNet,
# Inception v3 and v4 written again here in PyTorch, from the benchmark's layer lists (not
# from trellis's code), in functional form so that every parameter carries the name trellis
# gives it (conv0.weight, conv0.bn.bias, affine1.bias, ...: tf_cnn_benchmarks' counters).
# Reads what tests/models/zoo_export wrote (the parameters of a trellis model, a batch, and
# the loss, the gradients and the running statistics trellis computed on it), runs the same
# training step, and compares.
#   usage: zoo_pytorch.py EXPORT.json   (the raw floats in EXPORT.bin)
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(2)
MASK64 = (1 << 64) - 1


def mix(x):  # splitmix64's finaliser, on Python integers
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def mix_array(x):  # the same on a numpy uint64 array (wrapping multiplication)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def dropout_mask(seed, draw, layer, count, keep):
    # What trellis's dropout keeps: nn/dropout_mask.hpp's definition, written again.
    name = 0xCBF29CE484222325
    for c in layer.encode():
        name = ((name ^ c) * 0x100000001B3) & MASK64
    key = mix(mix(seed ^ name) ^ draw)
    with np.errstate(over="ignore"):
        elements = np.arange(count, dtype=np.uint64) * np.uint64(0xD6E8FEB86659FD93)
    top = mix_array(np.uint64(key) ^ elements) >> np.uint64(32)
    # trellis holds the probability as a float: its threshold is that float's
    threshold = int(float(np.float32(keep)) * 4294967296.0)
    return torch.from_numpy((top < np.uint64(threshold)).astype(np.float32))


def same_padding(size, kernel, stride):
    outputs = -(-size // stride)
    total = max((outputs - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class Loaded(dict):
    """Tensors by name, as trellis wrote them; `get` checks the shape the network expects."""

    def get(self, name, shape, initial=None):
        assert tuple(self[name].shape) == tuple(shape), (name, tuple(self[name].shape), tuple(shape))
        return self[name]


class Fresh(dict):
    """Tensors made on first use (tests/perf/models_vs_pytorch): weights a normal with
    variance 1 / fan-in (as trellis starts these models), the rest at `initial`."""

    def get(self, name, shape, initial=None):
        if name not in self:
            if initial is None:
                fan_in = int(np.prod(shape[1:]))
                value = torch.randn(*shape) * (1.0 / fan_in) ** 0.5
            else:
                value = torch.full(tuple(shape), float(initial))
            self[name] = value.requires_grad_(initial is None or name.endswith(".bias"))
        return self[name]


class Net:
    """tf_cnn_benchmarks' convnet_builder in PyTorch: each call appends a function. Parameters
    and statistics come from `params` and `stats` (Loaded or Fresh) when a layer first runs."""

    def __init__(self, params, stats, config, channels, names=None, batch_norm=False):
        self.params, self.stats, self.config = params, stats, config
        self.channels, self.names, self.batch_norm = channels, names if names is not None else {}, batch_norm
        self.ops = []

    def name(self, kind):
        n = self.names.get(kind, 0)
        self.names[kind] = n + 1
        return f"{kind}{n}"

    def branch(self):
        return Net(self.params, self.stats, self.config, self.channels, self.names, self.batch_norm)

    def pad(self, x, kh, kw, stride, mode, value=0.0):
        if mode == "valid":
            return x
        top, bottom = same_padding(x.shape[2], kh, stride)
        left, right = same_padding(x.shape[3], kw, stride)
        return F.pad(x, (left, right, top, bottom), value=value)

    def conv(self, out, kh, kw, stride=1, mode="same"):
        name, p, s, channels = self.name("conv"), self.params, self.stats, self.channels
        bn = name + ".bn"

        def run(x, training):
            weight = p.get(name + ".weight", (out, channels, kh, kw))
            bias = None if self.batch_norm else p.get(name + ".bias", (out,), 0.0)
            y = F.conv2d(self.pad(x, kh, kw, stride, mode), weight, bias, stride)
            if not self.batch_norm:
                return F.relu(y)
            scale = torch.ones(out, dtype=y.dtype)  # no learnt scale: gamma is 1
            y = F.batch_norm(y, s.get(bn + ".running_mean", (out,), 0.0), s.get(bn + ".running_var", (out,), 1.0),
                             scale, p.get(bn + ".bias", (out,), 0.0), training, 0.001, 1e-3)
            return F.relu(y)

        self.ops.append(run)
        self.channels = out
        return self

    def max_pool(self, k, stride, mode="valid"):
        self.name("mpool")
        self.ops.append(lambda x, t: F.max_pool2d(self.pad(x, k, k, stride, mode, float("-inf")), k, stride))
        return self

    def average_pool(self, k, stride, mode="valid"):
        self.name("apool")
        # SAME here is always 3x3 stride 1: one pixel each side, left out of the count.
        padding = 0 if mode == "valid" else (k - 1) // 2
        self.ops.append(lambda x, t: F.avg_pool2d(x, k, stride, padding, count_include_pad=False))
        return self

    def spatial_mean(self):
        self.name("spatial_mean")
        self.ops.append(lambda x, t: x.mean(dim=(2, 3)))
        return self

    def affine(self, out, relu=True):
        name, p = self.name("affine"), self.params

        def run(x, training):
            x = x.flatten(1)
            weight = p.get(name + ".weight", (out, x.shape[1]))
            y = F.linear(x, weight, p.get(name + ".bias", (out,), 0.0))
            return F.relu(y) if relu else y

        self.ops.append(run)
        self.channels = out
        return self

    def dropout(self, keep):
        name, config = self.name("dropout"), self.config

        def run(x, training):
            if not training:
                return x
            mask = dropout_mask(config["dropout_seed"], config["dropout_draw"], name, x.numel(), keep)
            return x * mask.reshape(x.shape).to(x.dtype) / float(np.float32(keep))

        self.ops.append(run)
        return self

    def concat(self, branches):
        self.name("concat")
        columns = []
        for write in branches:
            b = self.branch()
            write(b)
            columns.append(b)
        self.ops.append(lambda x, t: torch.cat([c(x, t) for c in columns], dim=1))
        self.channels = sum(c.channels for c in columns)
        return self

    def __call__(self, x, training):
        for op in self.ops:
            x = op(x, training)
        return x


# The models, from tf_cnn_benchmarks' models/*.py layer lists, plus the classifier it adds.
def alexnet(net, classes):
    net.conv(64, 11, 11, 4, "valid").max_pool(3, 2)
    net.conv(192, 5, 5).max_pool(3, 2)
    net.conv(384, 3, 3).conv(384, 3, 3).conv(256, 3, 3).max_pool(3, 2)
    net.affine(4096).dropout(0.5).affine(4096).dropout(0.5).affine(classes, False)


def vgg16(net, classes):
    for channels, count in [(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]:
        for _ in range(count):
            net.conv(channels, 3, 3)
        net.max_pool(2, 2)
    net.affine(4096).dropout(0.5).affine(4096).dropout(0.5).affine(classes, False)


def googlenet(net, classes):
    def v1(k, l, m, n, p, q):
        net.concat([lambda c: c.conv(k, 1, 1), lambda c: c.conv(l, 1, 1).conv(m, 3, 3),
                    lambda c: c.conv(n, 1, 1).conv(p, 5, 5), lambda c: c.max_pool(3, 1, "same").conv(q, 1, 1)])

    net.conv(64, 7, 7, 2).max_pool(3, 2, "same").conv(64, 1, 1).conv(192, 3, 3).max_pool(3, 2, "same")
    v1(64, 96, 128, 16, 32, 32)
    v1(128, 128, 192, 32, 96, 64)
    net.max_pool(3, 2, "same")
    v1(192, 96, 208, 16, 48, 64)
    v1(160, 112, 224, 24, 64, 64)
    v1(128, 128, 256, 24, 64, 64)
    v1(112, 144, 288, 32, 64, 64)
    v1(256, 160, 320, 32, 128, 128)
    net.max_pool(3, 2, "same")
    v1(256, 160, 320, 32, 128, 128)
    v1(384, 192, 384, 48, 128, 128)
    net.average_pool(7, 1).affine(classes, False)


def inception3(net, classes):
    def a(n):
        net.concat([lambda c: c.conv(64, 1, 1), lambda c: c.conv(48, 1, 1).conv(64, 5, 5),
                    lambda c: c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3),
                    lambda c: c.average_pool(3, 1, "same").conv(n, 1, 1)])

    def c7(n):
        net.concat([lambda c: c.conv(192, 1, 1), lambda c: c.conv(n, 1, 1).conv(n, 1, 7).conv(192, 7, 1),
                    lambda c: c.conv(n, 1, 1).conv(n, 7, 1).conv(n, 1, 7).conv(n, 7, 1).conv(192, 1, 7),
                    lambda c: c.average_pool(3, 1, "same").conv(192, 1, 1)])

    def fork(c):  # the 'share' columns: 1x3 and 3x1 off the same layer
        c.concat([lambda b: b.conv(384, 1, 3), lambda b: b.conv(384, 3, 1)])

    def e(pool):
        net.concat([lambda c: c.conv(320, 1, 1), lambda c: fork(c.conv(384, 1, 1)),
                    lambda c: fork(c.conv(448, 1, 1).conv(384, 3, 3)),
                    lambda c: getattr(c, pool)(3, 1, "same").conv(192, 1, 1)])

    net.conv(32, 3, 3, 2, "valid").conv(32, 3, 3, 1, "valid").conv(64, 3, 3).max_pool(3, 2)
    net.conv(80, 1, 1, 1, "valid").conv(192, 3, 3, 1, "valid").max_pool(3, 2)
    a(32), a(64), a(64)
    net.concat([lambda c: c.conv(384, 3, 3, 2, "valid"),
                lambda c: c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3, 2, "valid"), lambda c: c.max_pool(3, 2)])
    for n in (128, 160, 160, 192):
        c7(n)
    net.concat([lambda c: c.conv(192, 1, 1).conv(320, 3, 3, 2, "valid"),
                lambda c: c.conv(192, 1, 1).conv(192, 1, 7).conv(192, 7, 1).conv(192, 3, 3, 2, "valid"),
                lambda c: c.max_pool(3, 2)])
    e("average_pool"), e("max_pool")
    net.average_pool(8, 1).affine(classes, False)


def inception4(net, classes):
    net.conv(32, 3, 3, 2, "valid").conv(32, 3, 3, 1, "valid").conv(64, 3, 3)
    net.concat([lambda c: c.max_pool(3, 2), lambda c: c.conv(96, 3, 3, 2, "valid")])
    net.concat([lambda c: c.conv(64, 1, 1).conv(96, 3, 3, 1, "valid"),
                lambda c: c.conv(64, 1, 1).conv(64, 7, 1).conv(64, 1, 7).conv(96, 3, 3, 1, "valid")])
    net.concat([lambda c: c.conv(192, 3, 3, 2, "valid"), lambda c: c.max_pool(3, 2)])
    for _ in range(4):
        net.concat([lambda c: c.average_pool(3, 1, "same").conv(96, 1, 1), lambda c: c.conv(96, 1, 1),
                    lambda c: c.conv(64, 1, 1).conv(96, 3, 3), lambda c: c.conv(64, 1, 1).conv(96, 3, 3).conv(96, 3, 3)])
    net.concat([lambda c: c.max_pool(3, 2), lambda c: c.conv(384, 3, 3, 2, "valid"),
                lambda c: c.conv(192, 1, 1).conv(224, 3, 3).conv(256, 3, 3, 2, "valid")])
    for _ in range(7):
        net.concat([lambda c: c.average_pool(3, 1, "same").conv(128, 1, 1), lambda c: c.conv(384, 1, 1),
                    lambda c: c.conv(192, 1, 1).conv(224, 1, 7).conv(256, 7, 1),
                    lambda c: c.conv(192, 1, 1).conv(192, 1, 7).conv(224, 7, 1).conv(224, 1, 7).conv(256, 7, 1)])
    net.concat([lambda c: c.max_pool(3, 2), lambda c: c.conv(192, 1, 1).conv(192, 3, 3, 2, "valid"),
                lambda c: c.conv(256, 1, 1).conv(256, 1, 7).conv(320, 7, 1).conv(320, 3, 3, 2, "valid")])
    for _ in range(3):
        net.concat([lambda c: c.average_pool(3, 1, "same").conv(256, 1, 1), lambda c: c.conv(256, 1, 1),
                    lambda c: c.conv(384, 1, 1).concat([lambda b: b.conv(256, 1, 3), lambda b: b.conv(256, 3, 1)]),
                    lambda c: c.conv(384, 1, 1).conv(448, 1, 3).conv(512, 3, 1).concat(
                        [lambda b: b.conv(256, 3, 1), lambda b: b.conv(256, 1, 3)])])
    net.spatial_mean().dropout(0.8).affine(classes, False)


MODELS = {"alexnet": (alexnet, False), "vgg16": (vgg16, False), "googlenet": (googlenet, False),
          "inception3": (inception3, True), "inception4": (inception4, True)}


def reader(raw, dtype):
    """take(shape): the next tensor of that shape from zoo_export's raw floats, at `dtype`."""
    at = 0

    def take(shape):
        nonlocal at
        count = int(np.prod(shape))
        values = torch.from_numpy(raw[at:at + count].copy()).reshape(shape).to(dtype)
        at += count
        return values

    return take


def step(meta, raw, dtype):
    """One training step in PyTorch at `dtype`: (loss, gradients, running statistics after)."""
    take = reader(raw, dtype)
    n, size, classes = meta["batch"], meta["image_size"], meta["classes"]
    images = take((n, size, size, 3)).permute(0, 3, 1, 2).contiguous()  # trellis feeds NHWC
    params = Loaded({p["name"]: take(p["shape"]).requires_grad_() for p in meta["parameters"]})
    stats = Loaded({s["name"]: take(s["shape"]) for s in meta["statistics"]})
    build, batch_norm = MODELS[meta["model"]]
    net = Net(params, stats, meta, 3, batch_norm=batch_norm)
    build(net, classes)
    loss = F.cross_entropy(net(images, True), torch.tensor(meta["labels"]))
    loss.backward()
    return loss.item(), {k: v.grad for k, v in params.items()}, stats, take


def main():
    meta = json.load(open(sys.argv[1]))
    raw = np.fromfile(sys.argv[1][:-len(".json")] + ".bin", dtype=np.float32)
    # The reference is the step in float64. A deep network with batch norm on 2 images is
    # ill-conditioned (the backward pass subtracts nearly equal means, and ReLUs flip on
    # rounding), so float32 results differ from it by more than rounding: each parameter's
    # gradient must be as close to the reference (relative L2 distance) as PyTorch's own
    # float32 step is: within 3x its distance on that parameter, or its largest distance on
    # any parameter of the network, or 1e-4, whichever is more. A wrong layer is off by the
    # size of its gradient, and so are the layers before it.
    # Why a ratio to PyTorch, and why 3, on any CPU: a float32 pass's distance from float64 is
    # the sum of its operations' roundings, each about sqrt(K) ulps of a sum of K terms when its
    # roundings are independent (whatever the summation order, hence whatever kernels oneDNN
    # picks for the ISA), carried through the same network after it. Two float32 steps whose
    # every sum is about as long as the other's, or taken in double, are at the same expected
    # distance; the ratio stays near 1 or below (0.55x to 1.1x over the five models, oneDNN at
    # AVX-512 and capped at AVX2). 3x leaves room for sums up to 9x longer than the peer's.
    # What it catches besides wrong layers: a sum far longer than the peer's, as batch norm's
    # float32 mean over 2x149x149 values was (sqrt(44402) ulps; inception4's statistics were
    # 3.5x PyTorch's distance until trellis summed them in double, as PyTorch does).
    torch.set_default_dtype(torch.float64)
    ref_loss, ref_grads, ref_stats, _ = step(meta, raw, torch.float64)
    torch.set_default_dtype(torch.float32)
    peer_loss, peer_grads, peer_stats, take = step(meta, raw, torch.float32)
    ours_grads = {p["name"]: take(p["shape"]).double() for p in meta["parameters"]}
    ours_stats = {s["name"]: take(s["shape"]).double() for s in meta["statistics"]}

    def difference(a, b):  # relative L2 distance from the reference b
        return (a.double() - b).norm().item() / max(b.norm().item(), 1e-12)

    failures = []
    # The running statistics measure how far float32 forward passes drift from float64's;
    # the loss may drift as far (relatively), or 1e-4.
    peer_stat = max((difference(v, ref_stats[k]) for k, v in peer_stats.items()), default=0.0)
    if abs(meta["loss"] - ref_loss) > max(1e-4, 3 * peer_stat) * max(abs(ref_loss), 1.0):
        failures.append(f"loss: trellis {meta['loss']:.6f}, PyTorch {peer_loss:.6f} (float64 {ref_loss:.6f})")
    peer_distance = {name: difference(peer_grads[name], ref) for name, ref in ref_grads.items()}
    worst_peer = max((d, name) for name, d in peer_distance.items())
    worst = (0.0, "")
    for name, ref in ref_grads.items():
        ours, peer = difference(ours_grads[name], ref), peer_distance[name]
        worst = max(worst, (ours, name))
        if ours > max(3 * peer, worst_peer[0], 1e-4) and len(failures) < 10:
            failures.append(f"{name}: gradient {ours:.2e} from float64's, PyTorch's float32 {peer:.2e}")
    # The running statistics likewise, against PyTorch's largest distance on any of them.
    worst_stat = max(((difference(v, ref_stats[k]), k) for k, v in ours_stats.items()), default=(0.0, ""))
    if worst_stat[0] > max(3 * peer_stat, 1e-4):
        failures.append(f"running statistics: {worst_stat[0]:.2e} from float64's at {worst_stat[1]}, "
                        f"PyTorch's float32 at most {peer_stat:.2e}")
    values = sum(g.numel() for g in ref_grads.values())
    print(f"{meta['model']}: {len(ref_grads)} parameters ({values} values), loss trellis {meta['loss']:.6f} "
          f"PyTorch {peer_loss:.6f} float64 {ref_loss:.6f}; gradients from float64's: trellis worst {worst[0]:.2e} "
          f"({worst[1]}), PyTorch float32 worst {worst_peer[0]:.2e} ({worst_peer[1]}); running statistics "
          f"trellis {worst_stat[0]:.2e} PyTorch {peer_stat:.2e}")
    for f in failures:
        print("MISMATCH " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
