// SPDX-License-Identifier: Apache-2.0
// The PMIx wireup: identity from the PMIx server (Slurm's pmix plugin under srun --mpi=pmix),
// all-gathers through PMIx_Put / PMIx_Commit / PMIx_Fence (collecting data) / PMIx_Get.
#pragma once

#include <pmix.h>

#include "trainer/comm/wireup.hpp"

namespace trellis::comm {

class PmixWireup : public Wireup {
public:
    PmixWireup();  // throws CommError when PMIx_Init fails
    ~PmixWireup() override;

    std::string name() const override { return "pmix"; }
    std::vector<std::string> all_gather(const std::string& mine) override;
    std::string reachable_address() const override { return address_; }

    // True when this process was started by a PMIx server.
    static bool available();

    // The job-level PMIx key (a string of 64 hex digits) where a launcher may put the step's
    // secret, read when TRELLIS_SECRET is not set.
    static constexpr const char* secret_key = "trellis.secret";

private:
    std::uint32_t job_value(const char* key, pmix_rank_t rank) const;
    JobSecret launcher_secret() const;

    pmix_proc_t me_{};
    int round_ = 0;
    std::string address_;
};

}  // namespace trellis::comm
