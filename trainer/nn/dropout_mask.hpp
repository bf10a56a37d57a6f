// SPDX-License-Identifier: Apache-2.0
// Which activations dropout keeps, as a pure function of (seed, draw, layer, element): no
// generator state, so a resumed run drops what the uninterrupted one would have, every
// backend draws the same mask (the GPU can compute it per element), and a layer gives the
// same mask to repeated forward passes of one draw (finite-difference checks).
#pragma once

#include <cstdint>
#include <string>

namespace trellis::nn {

// What the model sets before each training forward pass: `draw` counts the batches trained
// (step x batches per step + the batch's index in its step), so that it is the same after a
// resume.
struct DropoutDraw {
    std::uint64_t seed = 0;
    std::uint64_t draw = 0;
};

// A key per layer and draw; element i is kept when keeps(key, i, threshold).
std::uint64_t dropout_key(const DropoutDraw& draw, const std::string& layer);

// splitmix64's finaliser over key + i: uniform 64-bit values, independent across elements.
constexpr std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// The threshold for keeping with probability `keep` (0 < keep <= 1), compared with the top
// 32 bits of the mixed value.
constexpr std::uint64_t keep_threshold(double keep) { return std::uint64_t(keep * 4294967296.0); }

constexpr bool keeps(std::uint64_t key, std::uint64_t element, std::uint64_t threshold) {
    return (mix(key ^ (element * 0xd6e8feb86659fd93ull)) >> 32) < threshold;
}

}  // namespace trellis::nn
