// SPDX-License-Identifier: Apache-2.0
// The smallest program that shows oneDNN 3.7.2 (Debian 13's libdnnl3.6) dying of SIGFPE on some
// CPUs: it asks for the primitive descriptor of one f32 convolution, 1x1 from 256 to 1024
// channels on 14x14 maps, batch 16, channels-last, as PyTorch asks for ResNet-50's. Nothing is
// allocated or run. On a CPU where the library is sound it prints the implementation chosen.
//   g++ -std=c++17 reproducer.cpp -ldnnl -o reproducer && ONEDNN_VERBOSE=all ./reproducer
#include <cstdio>

#include <oneapi/dnnl/dnnl.hpp>

int main() {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    memory::desc src({16, 256, 14, 14}, f32, memory::format_tag::nhwc);
    memory::desc weights({1024, 256, 1, 1}, f32, memory::format_tag::any);
    memory::desc dst({16, 1024, 14, 14}, f32, memory::format_tag::nhwc);
    dnnl::convolution_forward::primitive_desc pd(engine, dnnl::prop_kind::forward_training,
                                                 dnnl::algorithm::convolution_direct, src, weights, dst, {1, 1}, {0, 0},
                                                 {0, 0});
    const auto* version = dnnl_version();
    std::printf("oneDNN %d.%d.%d made the convolution: %s\n", version->major, version->minor, version->patch,
                pd.impl_info_str());
    return 0;
}
