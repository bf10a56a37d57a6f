// SPDX-License-Identifier: Apache-2.0
// Convolutions never run oneDNN's reference kernels (trainer/nn/cpu/reference_kernels.hpp).
// Its own binary: the ISA cap must be set before the process creates its first primitive.
#include "tests/catch.hpp"

#include "tests/unit/gradient_check.hpp"
#include "trainer/nn/cpu/convolution.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/nn/cpu/dnnl_version.hpp"
#include "trainer/nn/cpu/reference_kernels.hpp"

using namespace trellis;

TEST_CASE("a 3x3 convolution on 2x2 maps under the AVX2 cap: oneDNN's reference backward kernel is avoided") {
    // ResNet-50's last stage at 64x64 (2x2 maps, 3x3, padding 1), with fewer channels. oneDNN
    // 2.6 under AVX2 has only its reference backward-weights kernel for the forward pass's
    // blocked layouts (and, under SSE41, only a reference backward-data kernel too).
    // (The call overrides DNNL_MAX_CPU_ISA; on a CPU without AVX2 it caps nothing.)
    try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
    } catch (const dnnl::error&) {
        WARN("oneDNN refused the AVX2 cap: testing under the ISA it has");
    }
    nn::cpu::CpuBackend backend;
    auto layer = backend.convolution({"conv", 16, 16, nn::Window::square(3, 1, 1)});
    nn::TensorSpec input{tensor::Shape{2, 16, 2, 2}, nullptr};
    {
        // What oneDNN itself picks for the backward weights in the forward pass's layouts.
        using dnnl::memory;
        auto any = memory::format_tag::any;
        memory::desc src({2, 16, 2, 2}, memory::data_type::f32, any),
            weights({16, 16, 3, 3}, memory::data_type::f32, any);
        nn::cpu::WindowSteps steps{{1, 1}, {1, 1}, {1, 1}};
        auto forward = nn::cpu::convolution_forward_pd(src, weights, memory::desc(), src, steps, {});
        auto backward = nn::cpu::convolution_backward_weights_pd(forward.src_desc(), weights, memory::desc(),
                                                                 forward.dst_desc(), steps, forward, {});
        INFO("oneDNN's own choice in the forward layouts: " << backward.impl_info_str());
        if (!nn::cpu::is_reference(backward.impl_info_str()))
            WARN("this oneDNN (or CPU) has an optimised kernel for the shape anyway: only the answer is checked");
    }
    test::GradientCheck check(backend, *layer, input);
    auto& convolution = dynamic_cast<nn::cpu::Convolution&>(*layer);
    INFO("trellis's choice: " << convolution.implementations());
    CHECK(convolution.implementations().find("ref") == std::string::npos);
    // The rerouted passes (other layouts, reordered operands) still give the right gradients.
    auto result = check.run(12);
    INFO("worst: " << result.worst_where << "; skipped " << result.skipped);
    CHECK(result.checked >= result.skipped * 4);
    CHECK(result.worst_error < 1e-2);
}

TEST_CASE("reference implementations are told apart by oneDNN's name for them") {
    CHECK(nn::cpu::is_reference("ref:any"));
    CHECK(nn::cpu::is_reference("ref_fused_convolution:any"));
    CHECK(nn::cpu::is_reference("bnorm_ref:any"));
    CHECK(nn::cpu::is_reference("gemm:ref"));
    CHECK_FALSE(nn::cpu::is_reference("jit:avx2"));
    CHECK_FALSE(nn::cpu::is_reference("x64:gemm:jit"));
    CHECK_FALSE(nn::cpu::is_reference("gemm:jit"));
    CHECK_FALSE(nn::cpu::is_reference("bnorm_jit:sse41"));
    CHECK_FALSE(nn::cpu::is_reference("simple:any"));
}
