// SPDX-License-Identifier: Apache-2.0
// An image's own settings (Env, WorkingDir, Entrypoint) and how a task takes them, the same
// way in the plugin's task_init and in `trellis-agent launch`: the rules spank_trellis(8)
// tabulates. Read from the JSON `skopeo inspect --config` prints, which a squashfs image keeps
// beside it. An administrator's OCI bundle has none: its config.json is not read.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent/image/reference.hpp"

namespace trellis::agent {

struct ImageSettings {
    std::vector<std::pair<std::string, std::string>> env;  // in the image's order
    std::string working_dir;                               // "" when the image names none
    std::vector<std::string> entrypoint;
};

// The task's choices about the image's settings (--trellis-env, --trellis-entrypoint).
struct SettingsChoices {
    std::vector<std::string> keep_env;  // names whose job value wins over the image's
    bool entrypoint = false;            // run the image's Entrypoint before the command
};

// `json` as skopeo prints it ({"config": {...}}) or its "config" object alone; "" gives no
// settings. Throws ContainerError naming what is malformed.
ImageSettings parse_image_settings(const std::string& json);

// `json` checked (parse_image_settings) and written on one line ("{}" for none), as prepare
// hands it to the tasks: `extra_env` ("NAME=VALUE", CDI's) after the image's Env, and `notes`
// for the step's first task to print (settings_notes). Throws ContainerError.
std::string one_line_settings(const std::string& json, const std::vector<std::string>& extra_env = {},
                              const std::vector<std::string>& notes = {});

// The notes one_line_settings carried.
std::vector<std::string> settings_notes(const std::string& json);

// The most a settings file may hold: skopeo's printed form of a configuration of its limit.
constexpr std::size_t settings_limit = 2 * image_json_limit;

// The file's text, as the user reads it (at most settings_limit); "" for no file. Throws
// ContainerError.
std::string read_settings_file(const std::string& path);
// The same from a descriptor opened by the check (-1: no file); `path` names it in messages.
std::string read_settings(int fd, const std::string& path);

// "NAME,NAME": names of variables, each [A-Za-z_][A-Za-z0-9_]*. Throws UsageError.
std::vector<std::string> parse_env_names(const std::string& list);

// Variables trellis or Slurm set for a task, which an image's Env never replaces: SLURM_*, SLURMD_*, SRUN_*,
// TRELLIS_*, PMIX_*, PMI_*, and every variable of trellis's table (common/environment.hpp:
// the binding, CUDA_VISIBLE_DEVICES, the frameworks' wireup) that the task has.
bool set_for_the_task(const std::string& name, const std::function<bool(const std::string&)>& task_has);

// The image's Env the task takes, over its environment: all but set_for_the_task's and
// keep_env's names.
std::vector<std::pair<std::string, std::string>> image_env_for_task(
    const ImageSettings& settings, const SettingsChoices& choices,
    const std::function<bool(const std::string&)>& task_has);

// The command a task runs: with choices.entrypoint, the image's Entrypoint then `command`.
std::vector<std::string> task_command(const ImageSettings& settings, const SettingsChoices& choices,
                                      std::vector<std::string> command);

// The directories a task tries, in order, once inside the container: the job's directory when
// it is at or under a mount destination; else the image's WorkingDir when it has one; else the
// job's directory (when the image has it); else "/". chdir to the first that works.
std::vector<std::string> working_directory_candidates(const std::string& job_dir,
                                                      const std::vector<std::string>& mount_destinations,
                                                      const ImageSettings& settings);

// Everything a task takes from its image, in one place for the plugin and the launcher: the
// variables to set (after trellis's own), the directories to try, and the command to run.
struct TaskInImage {
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> directories;
    std::vector<std::string> command;
};
TaskInImage task_in_image(const std::string& settings_json, const SettingsChoices& choices, const std::string& job_dir,
                          const std::vector<std::string>& mount_destinations,
                          const std::function<bool(const std::string&)>& task_has, std::vector<std::string> command);

// The line a step's first task writes when it started in "/" although it was in `job_dir`
// and the image's WorkingDir is not "/"; "" when there is nothing to say.
std::string start_directory_note(const std::string& started, const std::string& job_dir,
                                 const std::string& settings_json, const std::string& image);

}  // namespace trellis::agent
