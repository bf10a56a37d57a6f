// SPDX-License-Identifier: Apache-2.0
// How gradients travel: as float32, or compressed to bfloat16 or float16 (half the bytes on
// the wire; sums are still accumulated in float32). bfloat16 keeps float32's range with 8
// bits of mantissa; float16 keeps 11 bits but overflows above 65504.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/cli.hpp"

namespace trellis::comm {

enum class WireFormat { f32, bf16, f16 };

// The spellings of --compress: none (f32), bf16, fp16.
const cli::Choices<WireFormat>& wire_formats();
std::size_t wire_bytes(WireFormat format);  // per element

// values -> wire (round to nearest even)
void encode(WireFormat format, std::span<const float> values, std::byte* wire);
// wire -> values, replacing them
void decode(WireFormat format, const std::byte* wire, std::span<float> values);
// values += wire
void decode_add(WireFormat format, const std::byte* wire, std::span<float> values);

}  // namespace trellis::comm
