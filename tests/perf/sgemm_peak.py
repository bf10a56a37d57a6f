#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# This machine's single-precision matrix-multiply peak, as the trainer's own library reaches
# it: oneDNN's dnnl_sgemm through ctypes, on OMP_NUM_THREADS threads and under whatever ISA cap
# (DNNL_MAX_CPU_ISA / ONEDNN_MAX_CPU_ISA) the benchmark runs with. The benchmarks' "of peak"
# columns divide by it, measured in the same run: these machines' CPUs differ from session to
# session (AVX-512 or AVX2 only), and a constant from another machine misleads by 2x or more.
# Prints the best GFLOP/s of square products of 1024 over about SECONDS (default 2).
#   usage: sgemm_peak.py [SECONDS]
import ctypes
import sys
import time

import numpy as np

budget = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
dnnl = ctypes.CDLL("libdnnl.so.2")
n = 1024
a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
c = np.zeros((n, n), dtype=np.float32)
f32p = ctypes.POINTER(ctypes.c_float)
dnnl.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_float, f32p, ctypes.c_int64, f32p, ctypes.c_int64, ctypes.c_float, f32p,
                            ctypes.c_int64]
args = (b"N", b"N", n, n, n, 1.0, a.ctypes.data_as(f32p), n, b.ctypes.data_as(f32p), n, 0.0,
        c.ctypes.data_as(f32p), n)
if dnnl.dnnl_sgemm(*args) != 0:
    sys.exit("sgemm_peak: dnnl_sgemm failed")
best, end = 0.0, time.perf_counter() + budget
while time.perf_counter() < end:
    start = time.perf_counter()
    dnnl.dnnl_sgemm(*args)
    best = max(best, 2.0 * n ** 3 / (time.perf_counter() - start) / 1e9)
print(f"{best:.1f}")
