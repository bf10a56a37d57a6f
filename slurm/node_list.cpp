// SPDX-License-Identifier: Apache-2.0
#include "slurm/node_list.hpp"

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <slurm/slurm.h>

#include "common/error.hpp"

namespace trellis::slurm {

std::string first_node_address(const std::string& nodelist) {
    // auto: hostlist_t is a pointer in Slurm 22.05 and the struct itself since 23.11, whose
    // hostlist calls take and return hostlist_t * (slurm.h, commits ba44a52602 and 1085bf6a9b).
    auto list = slurm_hostlist_create(nodelist.c_str());
    if (!list) throw UsageError("cannot parse the Slurm node list '" + nodelist + "'");
    char* first = slurm_hostlist_shift(list);
    std::string node = first ? first : "";
    std::free(first);
    slurm_hostlist_destroy(list);
    if (node.empty()) throw UsageError("the Slurm node list '" + nodelist + "' is empty");

    // libslurm wants slurm_init before any call that talks to slurmctld (slurm.h). 22.05
    // managed without it; 24.11 stops the process in slurm_load_node_single ("fatal: Can't
    // find plugin for (null)": no auth plugin). In a step, SLURM_CONF names the
    // configuration, configless included (slurmd exports it).
    static std::once_flag slurm_initialised;
    std::call_once(slurm_initialised, [] { slurm_init(nullptr); });
    node_info_msg_t* info = nullptr;
    std::string address;
    if (slurm_load_node_single(&info, node.data(), 0) == SLURM_SUCCESS && info && info->record_count > 0 &&
        info->node_array[0].node_addr)
        address = info->node_array[0].node_addr;
    if (info) slurm_free_node_info_msg(info);
    return address.empty() ? node : address;
}

}  // namespace trellis::slurm
