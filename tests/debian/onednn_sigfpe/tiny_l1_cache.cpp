// SPDX-License-Identifier: Apache-2.0
// Makes any x86-64 machine look, to oneDNN 3.7, like the virtual machines it dies on: an
// LD_PRELOAD library that stands in for oneDNN's exported
// dnnl::impl::cpu::platform::get_per_core_cache_size(level) and answers what that function
// computes from a CPUID leaf 0x8000001D that a hypervisor left zeroed on an AMD CPU: Xbyak's
// AMD branch takes each cache for (0+1)*(0+1)*(0+1)*(0+1) = 1 byte. TINY_CACHE=L1,L2,L3 (bytes)
// sets other sizes.
//   g++ -shared -fPIC -O1 tiny_l1_cache.cpp -o tiny_l1_cache.so
//   LD_PRELOAD=./tiny_l1_cache.so ./reproducer     (dies of SIGFPE with oneDNN 3.7.2)
#include <cstdlib>

namespace dnnl::impl::cpu::platform {

unsigned get_per_core_cache_size(int level) {
    unsigned sizes[3] = {1, 1, 1};
    if (const char* text = std::getenv("TINY_CACHE")) {
        char* end = nullptr;
        for (int i = 0; i < 3 && *text; ++i, text = *end ? end + 1 : end)
            sizes[i] = unsigned(std::strtoul(text, &end, 10));
    }
    return level >= 1 && level <= 3 ? sizes[level - 1] : 0;
}

}  // namespace dnnl::impl::cpu::platform
