// SPDX-License-Identifier: Apache-2.0
#include "trainer/nn/cpu/reference_kernels.hpp"

#include <algorithm>
#include <stdexcept>

namespace trellis::nn::cpu {

bool is_reference(const std::string& implementation) {
    // oneDNN's names are ':'-separated words: "ref:any", "bnorm_ref:any", "ref_fused_convolution:any"
    // are reference kernels, "jit:avx2" and "x64:gemm:jit" are not.
    std::size_t start = 0;
    while (start <= implementation.size()) {
        auto end = std::min(implementation.find(':', start), implementation.size());
        auto word = implementation.substr(start, end - start);
        if (word == "ref" || word.rfind("ref_", 0) == 0 ||
            (word.size() > 4 && word.compare(word.size() - 4, 4, "_ref") == 0))
            return true;
        start = end + 1;
    }
    return false;
}

namespace {
const char* isa_name(dnnl::cpu_isa isa) {
    switch (isa) {
    case dnnl::cpu_isa::sse41: return "SSE41";
    case dnnl::cpu_isa::avx: return "AVX";
    case dnnl::cpu_isa::avx2: return "AVX2";
    case dnnl::cpu_isa::avx512_core: return "AVX512_CORE";
    default: return "another ISA";
    }
}
}  // namespace

void refuse_reference(const std::string& layer, const std::string& pass, const std::string& implementation) {
    throw std::runtime_error(layer + ": oneDNN has only its reference kernel (" + implementation + ") for the " + pass +
                             " pass on this CPU (" + isa_name(dnnl::get_effective_cpu_isa()) +
                             "), far too slow to train with");
}

}  // namespace trellis::nn::cpu
