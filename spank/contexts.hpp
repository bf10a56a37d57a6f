// SPDX-License-Identifier: Apache-2.0
// The SPANK entry points, one concern each: options (option_callbacks.cpp), the node's plan
// (user_init.cpp), applying it per task (task_init.cpp) and the step's container
// (container.cpp). plugin.cpp only dispatches.
#pragma once

#include <string>
#include <vector>

#include "spank/spank_api.hpp"

namespace trellis::spank {

// The job's variable NAME as slurmstepd holds it ("" when unset).
std::string job_env(spank_t sp, const char* name);

int register_options(spank_t sp);
// Reads TRELLIS_BIND/TRELLIS_HCA/TRELLIS_VERBOSE where the options were not given.
int take_environment_defaults(spank_t sp);
int load_configuration(const std::vector<std::string>& args);

// The step's secret (step_secret.cpp): made in srun's init, given to the tasks in user_init.
void make_secret_for_step();
void give_secret_to_tasks(spank_t sp);

int plan_node(spank_t sp);  // user_init
// The container (container.cpp): checked in srun, made once per node, entered per task.
int check_container_request();  // srun: also resolves a registry tag to its digest
// slurmstepd: a registry image with a tag becomes the reference srun pinned to its digest.
void take_pinned_image(spank_t sp);
void make_image_cache_folder(spank_t sp);  // init_post_opt, as root: the user's cache folder for an import
// srun (image_broadcast.cpp): a registry image is imported here once, before the step exists
// (check_container_request), and sent to the step's nodes once they are known, before the
// launch (local_user_init). -1: interrupted, the step does not start.
int stage_image_for_step(const std::string& pinned);
int send_image_to_nodes(spank_t sp);
// job_prolog, as root on each node of the job: the job's user's folder in the image cache.
void make_cache_folder_for_job(spank_t sp, const std::vector<std::string>& args);
void prepare_container(spank_t sp);  // user_init, after plan_node: the plan names the devices
// task_init, as the user: a task that cannot enter the image it asked for exits here.
void enter_container(spank_t sp);
void refuse_unhonoured_image(spank_t sp);   // task_init, when trellis is disabled
void let_go_of_container();                 // exit, in slurmstepd: a held Apptainer stops
int set_container_environment(spank_t sp);  // task_init
int apply_image_environment(spank_t sp);    // task_init, last: the image's Env over the job's
int bind_task_memory(spank_t sp);           // task_init_privileged
int bind_task(spank_t sp);                  // task_init

}  // namespace trellis::spank
