// SPDX-License-Identifier: Apache-2.0
// Whether this process's oneDNN can make a convolution here, asked of a forked child before a
// run. oneDNN 3.7.2 (Debian 13) dies of SIGFPE, an integer division by zero, while it chooses
// the implementation of a 1x1 convolution of 256 to 1024 channels on some CPUs (AMD EPYC
// virtual machines whose CPUID reports no cache sizes, so that oneDNN takes the L1 cache for a
// byte): a run that met it would die in its model's setup with nothing but "Floating point
// exception". The child takes that blow instead, and the run is refused with a line that names
// the library and what to do.
#pragma once

namespace trellis::nn::cpu {

// Runs the probe once per process (later calls return at once). Throws Refused, naming the
// library, the CPU and the way out, when the child dies of SIGFPE; Error when it dies of
// anything else. TRELLIS_TEST_CONVOLUTION_PROBE=sigfpe (or sigsegv) makes the child die so
// before it asks oneDNN, so that the refusal is tested on every CPU.
void require_working_convolutions();

}  // namespace trellis::nn::cpu
