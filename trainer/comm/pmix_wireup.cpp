// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/pmix_wireup.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/environment.hpp"
#include "common/host.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/socket.hpp"

namespace trellis::comm {

bool PmixWireup::available() {
    // The variables a PMIx server gives its clients (PMIx v2+ and Slurm's plugin).
    return std::getenv("PMIX_RANK") != nullptr && std::getenv("PMIX_NAMESPACE") != nullptr;
}

PmixWireup::PmixWireup() {
    int status = PMIx_Init(&me_, nullptr, 0);
    if (status != PMIX_SUCCESS)
        throw CommError(std::string("pmix wireup: PMIx_Init failed: ") + PMIx_Error_string(status));
    identity_.rank = int(me_.rank);
    identity_.size = int(job_value(PMIX_JOB_SIZE, PMIX_RANK_WILDCARD));
    identity_.local_rank = int(job_value(PMIX_LOCAL_RANK, me_.rank));
    identity_.node = int(job_value(PMIX_NODEID, me_.rank));
    identity_.host = node_name();
    secret_ = launcher_secret();
    try {
        address_ = resolve_ipv4(host_name());
    } catch (const CommError&) {}
    // A loopback answer reaches no other node: take an interface's address instead.
    if (address_.empty() || address_.starts_with("127.")) {
        auto external = external_ipv4();
        address_ = external.empty() ? "127.0.0.1" : external;
    }
}

PmixWireup::~PmixWireup() { PMIx_Finalize(nullptr, 0); }

JobSecret PmixWireup::launcher_secret() const {
    // A launcher without trellis's plugin may have put one among the job's values.
    if (!env_value(env::secret.name) && identity_.size > 1) {
        pmix_proc_t job;
        PMIX_LOAD_PROCID(&job, me_.nspace, PMIX_RANK_WILDCARD);
        pmix_value_t* value = nullptr;
        // Optional: what the local store lacks is not asked of the server, which would wait.
        pmix_info_t optional;
        bool yes = true;
        PMIX_INFO_LOAD(&optional, PMIX_OPTIONAL, &yes, PMIX_BOOL);
        int status = PMIx_Get(&job, secret_key, &optional, 1, &value);
        PMIX_INFO_DESTRUCT(&optional);
        if (status == PMIX_SUCCESS && value) {
            std::string text = value->type == PMIX_STRING && value->data.string ? value->data.string : "";
            PMIX_VALUE_RELEASE(value);
            if (!text.empty()) return JobSecret(parse_step_secret(text));
        }
    }
    return step_secret_from_environment("pmix", identity_.size,
                                        std::string("the trellis plugin sets it for every srun step; another launcher "
                                                    "may pass it to the ranks, or put it in PMIx as the job's ") +
                                            secret_key);
}

std::uint32_t PmixWireup::job_value(const char* key, pmix_rank_t rank) const {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, me_.nspace, rank);
    pmix_value_t* value = nullptr;
    if (PMIx_Get(&proc, key, nullptr, 0, &value) != PMIX_SUCCESS || !value)
        throw CommError(std::string("pmix wireup: the server does not provide ") + key);
    std::uint32_t result = 0;
    switch (value->type) {
    case PMIX_UINT32: result = value->data.uint32; break;
    case PMIX_UINT16: result = value->data.uint16; break;
    case PMIX_INT: result = std::uint32_t(value->data.integer); break;
    case PMIX_PROC_RANK: result = value->data.rank; break;
    default: result = value->data.uint32;
    }
    PMIX_VALUE_RELEASE(value);
    return result;
}

std::vector<std::string> PmixWireup::all_gather(const std::string& mine) {
    auto key = "trellis.wireup." + std::to_string(round_++);
    pmix_value_t value;
    pmix_byte_object_t bytes{const_cast<char*>(mine.data()), mine.size()};
    PMIX_VALUE_LOAD(&value, &bytes, PMIX_BYTE_OBJECT);
    int status = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    PMIX_VALUE_DESTRUCT(&value);
    if (status == PMIX_SUCCESS) status = PMIx_Commit();
    if (status != PMIX_SUCCESS) throw CommError(std::string("pmix wireup: put/commit: ") + PMIx_Error_string(status));

    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    status = PMIx_Fence(&all, 1, &collect, 1);
    PMIX_INFO_DESTRUCT(&collect);
    if (status != PMIX_SUCCESS) throw CommError(std::string("pmix wireup: fence: ") + PMIx_Error_string(status));

    std::vector<std::string> blobs(std::size_t(identity_.size));
    for (int r = 0; r < identity_.size; ++r) {
        pmix_proc_t peer;
        PMIX_LOAD_PROCID(&peer, me_.nspace, pmix_rank_t(r));
        pmix_value_t* got = nullptr;
        if (PMIx_Get(&peer, key.c_str(), nullptr, 0, &got) != PMIX_SUCCESS || !got || got->type != PMIX_BYTE_OBJECT)
            throw CommError("pmix wireup: no " + key + " from rank " + std::to_string(r));
        blobs[std::size_t(r)].assign(got->data.bo.bytes, got->data.bo.size);
        PMIX_VALUE_RELEASE(got);
    }
    return blobs;
}

}  // namespace trellis::comm
