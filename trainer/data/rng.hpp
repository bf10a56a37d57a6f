// SPDX-License-Identifier: Apache-2.0
// A small explicit random generator: every random choice of the data pipeline draws from an
// Rng seeded from (seed, epoch, sample index), never from global state, so that batches are
// the same whatever the thread count or timing, and a resumed run sees what the original saw.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace trellis::data {

// SplitMix64's step: a bijective scrambler, used to derive seeds and to seed xoshiro.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// One seed from several values (seed, epoch, index): each value is folded in through a
// SplitMix64 step, so nearby tuples give unrelated seeds.
constexpr std::uint64_t mix_seed(std::initializer_list<std::uint64_t> values) {
    std::uint64_t state = 0x6a09e667f3bcc908ull;
    std::uint64_t seed = 0;
    for (std::uint64_t value : values) {
        state ^= value;
        seed = splitmix64(state);
        state = seed;
    }
    return seed;
}

// xoshiro256**: fast, 256 bits of state, good statistical quality for augmentation.
class Rng {
public:
    explicit constexpr Rng(std::uint64_t seed) {
        for (auto& word : state_) word = splitmix64(seed);
    }

    constexpr std::uint64_t next_u64() {
        std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    double uniform(double low, double high) { return low + (high - low) * uniform(); }

    // Uniform integer in [0, bound), without modulo bias (Lemire's multiply-and-reject).
    std::uint64_t below(std::uint64_t bound) {
        if (bound == 0) return 0;
        unsigned __int128 product = static_cast<unsigned __int128>(next_u64()) * bound;
        std::uint64_t low = static_cast<std::uint64_t>(product);
        if (low < bound) {
            std::uint64_t threshold = -bound % bound;
            while (low < threshold) {
                product = static_cast<unsigned __int128>(next_u64()) * bound;
                low = static_cast<std::uint64_t>(product);
            }
        }
        return static_cast<std::uint64_t>(product >> 64);
    }

    // Uniform integer in [low, high], both ends included.
    std::int64_t between(std::int64_t low, std::int64_t high) {
        return low + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(high - low) + 1));
    }

    // Standard normal (Box-Muller; one value per call keeps the state simple).
    double normal() {
        double u = 1.0 - uniform();  // (0, 1]: log is finite
        return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * uniform());
    }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t state_[4]{};
};

}  // namespace trellis::data
