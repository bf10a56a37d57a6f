// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/wire_format.hpp"

#include <bit>
#include <cstring>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::comm {

namespace {

// Branch-free so that the loops vectorise; a NaN keeps a mantissa bit and stays NaN.
inline std::uint16_t to_bf16(float value) {
    auto bits = std::bit_cast<std::uint32_t>(value);
    std::uint32_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
    std::uint32_t nan = (bits >> 16) | 0x40;
    return std::uint16_t((bits & 0x7fffffff) > 0x7f800000 ? nan : rounded);
}

float from_bf16(std::uint16_t value) { return std::bit_cast<float>(std::uint32_t(value) << 16); }

// The loops, each also built for x86-64-v3 (AVX2, F16C) and chosen at load time: the
// conversions then run at memory speed instead of becoming the bottleneck of the transfer.
#define TRELLIS_VECTOR_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))

TRELLIS_VECTOR_CLONES void encode_bf16(const float* in, std::uint16_t* out, std::size_t n) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}
TRELLIS_VECTOR_CLONES void encode_f16(const float* in, _Float16* out, std::size_t n) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) out[i] = _Float16(in[i]);
}
TRELLIS_VECTOR_CLONES void decode_bf16(const std::uint16_t* in, float* out, std::size_t n, bool add) {
    if (add) {
#pragma omp simd
        for (std::size_t i = 0; i < n; ++i) out[i] += from_bf16(in[i]);
    } else {
#pragma omp simd
        for (std::size_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
    }
}
TRELLIS_VECTOR_CLONES void decode_f16(const _Float16* in, float* out, std::size_t n, bool add) {
    if (add) {
#pragma omp simd
        for (std::size_t i = 0; i < n; ++i) out[i] += float(in[i]);
    } else {
#pragma omp simd
        for (std::size_t i = 0; i < n; ++i) out[i] = float(in[i]);
    }
}
TRELLIS_VECTOR_CLONES void add_f32(const float* in, float* out, std::size_t n) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) out[i] += in[i];
}

void decode_into(WireFormat format, const std::byte* wire, std::span<float> values, bool add) {
    if (format == WireFormat::bf16)
        decode_bf16(reinterpret_cast<const std::uint16_t*>(wire), values.data(), values.size(), add);
    else
        decode_f16(reinterpret_cast<const _Float16*>(wire), values.data(), values.size(), add);
}

}  // namespace

const cli::Choices<WireFormat>& wire_formats() {
    static const cli::Choices<WireFormat> choices{
        {{"none", WireFormat::f32}, {"bf16", WireFormat::bf16}, {"fp16", WireFormat::f16}}};
    return choices;
}

std::size_t wire_bytes(WireFormat format) { return format == WireFormat::f32 ? 4 : 2; }

void encode(WireFormat format, std::span<const float> values, std::byte* wire) {
    if (format == WireFormat::f32) {
        std::memcpy(wire, values.data(), values.size_bytes());
    } else if (format == WireFormat::bf16) {
        encode_bf16(values.data(), reinterpret_cast<std::uint16_t*>(wire), values.size());
    } else {
        encode_f16(values.data(), reinterpret_cast<_Float16*>(wire), values.size());
    }
}

void decode(WireFormat format, const std::byte* wire, std::span<float> values) {
    if (format == WireFormat::f32) {
        std::memcpy(values.data(), wire, values.size_bytes());
        return;
    }
    decode_into(format, wire, values, false);
}

void decode_add(WireFormat format, const std::byte* wire, std::span<float> values) {
    if (format == WireFormat::f32)
        add_f32(reinterpret_cast<const float*>(wire), values.data(), values.size());
    else
        decode_into(format, wire, values, true);
}

}  // namespace trellis::comm
