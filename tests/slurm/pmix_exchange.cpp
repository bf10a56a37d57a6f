// SPDX-License-Identifier: Apache-2.0
// A PMIx client for the Slurm tests: each rank puts a value naming itself, commits, fences
// with data collection, then reads every other rank's value. Prints one line per rank and
// exits non-zero on any mismatch, so srun fails when PMIx does not work across nodes.
#include <pmix.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

int main() {
    pmix_proc_t me;
    if (PMIx_Init(&me, nullptr, 0) != PMIX_SUCCESS) {
        std::fprintf(stderr, "pmix_exchange: PMIx_Init failed\n");
        return 1;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const char* node = std::getenv("SLURMD_NODENAME");
    std::string mine = "rank " + std::to_string(me.rank) + " on " + (node ? node : host);

    pmix_value_t value;
    PMIX_VALUE_LOAD(&value, mine.c_str(), PMIX_STRING);
    int failures = 0;
    if (PMIx_Put(PMIX_GLOBAL, "trellis.test.key", &value) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS) {
        std::fprintf(stderr, "pmix_exchange: rank %u cannot put/commit\n", me.rank);
        failures++;
    }
    PMIX_VALUE_DESTRUCT(&value);

    pmix_proc_t all;
    PMIX_PROC_CONSTRUCT(&all);
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (PMIx_Fence(&all, 1, &collect, 1) != PMIX_SUCCESS) {
        std::fprintf(stderr, "pmix_exchange: rank %u: fence failed\n", me.rank);
        failures++;
    }

    pmix_value_t* size_value = nullptr;
    uint32_t size = 0;
    if (PMIx_Get(&all, PMIX_JOB_SIZE, nullptr, 0, &size_value) == PMIX_SUCCESS && size_value) {
        size = size_value->data.uint32;
        PMIX_VALUE_RELEASE(size_value);
    }
    std::string seen;
    for (uint32_t r = 0; r < size; ++r) {
        pmix_proc_t peer;
        PMIX_LOAD_PROCID(&peer, me.nspace, r);
        pmix_value_t* got = nullptr;
        if (PMIx_Get(&peer, "trellis.test.key", nullptr, 0, &got) != PMIX_SUCCESS || !got || got->type != PMIX_STRING ||
            std::strncmp(got->data.string, ("rank " + std::to_string(r) + " on ").c_str(),
                         ("rank " + std::to_string(r) + " on ").size()) != 0) {
            std::fprintf(stderr, "pmix_exchange: rank %u: no good value from rank %u\n", me.rank, r);
            failures++;
        } else {
            seen += std::string(seen.empty() ? "" : "; ") + got->data.string;
        }
        if (got) PMIX_VALUE_RELEASE(got);
    }
    std::printf("pmix_exchange: %s of %u sees: %s\n", mine.c_str(), size, seen.c_str());
    PMIx_Finalize(nullptr, 0);
    return failures == 0 && size > 1 ? 0 : 1;
}
