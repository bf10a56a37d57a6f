// SPDX-License-Identifier: Apache-2.0
/* An Open MPI program started by srun --mpi=pmix under the plugin's binding: every rank
 * sums its rank number with all others and sends its node name around a ring, so that data
 * crosses both nodes. Prints one line per rank: rank, size, node, sum, the left neighbour's
 * node, and the CPUs it was bound to. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char node[64] = {0}, left[64] = {0};
    const char* name = getenv("SLURMD_NODENAME");
    snprintf(node, sizeof node, "%s", name ? name : "?");
    long mine = rank, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(node, sizeof node, MPI_CHAR, (rank + 1) % size, 0, left, sizeof left, MPI_CHAR,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char cpus[256] = "?";
    FILE* status = fopen("/proc/self/status", "r");
    for (char line[512]; status && fgets(line, sizeof line, status);)
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) sscanf(line + 18, "%255s", cpus);
    if (status) fclose(status);
    printf("rank %d of %d on %s: sum %ld, left neighbour on %s, CPUs %s, TRELLIS_CPUS %s\n", rank, size, node, sum,
           left, cpus, getenv("TRELLIS_CPUS") ? getenv("TRELLIS_CPUS") : "-");
    MPI_Finalize();
    return 0;
}
