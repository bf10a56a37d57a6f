// SPDX-License-Identifier: Apache-2.0
// Element types and devices a tensor can live on. The CPU backend computes f32; the CUDA
// backend f32, bf16 and f16 (mixed precision, with f32 master weights).
#pragma once

#include <cstddef>
#include <string_view>

namespace trellis::tensor {

enum class DType { f32, bf16, f16 };
enum class Device { cpu, cuda };

constexpr std::size_t element_size(DType type) { return type == DType::f32 ? 4 : 2; }

constexpr std::string_view name(DType type) {
    switch (type) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    }
    return "?";
}

constexpr std::string_view name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

}  // namespace trellis::tensor
