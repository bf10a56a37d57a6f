// SPDX-License-Identifier: Apache-2.0
/* The Open MPI peer of trellis-bench allreduce: MPI_Allreduce (float sum, in place) with the
 * same sizes, iteration counts (TRELLIS_ALLREDUCE_ITERS timed, 1 warm-up) and check, printing one line per size with the median time
 * and the bus bandwidth as nccl-tests defines it. Built by tests/perf/allreduce_vs_peers. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char* iters = getenv("TRELLIS_ALLREDUCE_ITERS");
    int iterations = iters ? atoi(iters) : 10, warmup = 1;
    if (iterations < 1 || iterations > 64) iterations = 10;
    for (int a = 1; a < argc; ++a) {
        size_t count = strtoull(argv[a], NULL, 10) / sizeof(float);
        float* data = malloc(count * sizeof(float));
        double times[64];
        long wrong = 0;
        for (int i = 0; i < warmup + iterations; ++i) {
            for (size_t j = 0; j < count; ++j) data[j] = (float)((rank + 1) * (int)(j % 7 + 1));
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (i >= warmup) times[i - warmup] = MPI_Wtime() - start;
        }
        for (size_t j = 0; j < count; ++j) wrong += data[j] != (float)(n * (n + 1) / 2 * (int)(j % 7 + 1));
        qsort(times, iterations, sizeof(double), by_value);
        double median = times[iterations / 2], bytes = (double)count * sizeof(float);
        if (rank == 0)
            printf("{\"bytes\": %.0f, \"time_us\": %.1f, \"busbw_gbs\": %.3f, \"wrong\": %ld}\n", bytes, median * 1e6,
                   bytes / median / 1e9 * 2.0 * (n - 1) / n, wrong);
        free(data);
    }
    MPI_Finalize();
    return 0;
}
