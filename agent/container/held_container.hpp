// SPDX-License-Identifier: Apache-2.0
// A step's container held by its namespaces. `trellis-agent prepare`, run as the job's user,
// makes the container around itself and says "ready"; its namespaces are opened here while it
// is still this process's unreaped child (its pid cannot be reused meanwhile), checked to be
// a user namespace of the job's user's with a mount namespace of its own, and the helper is
// let go. No process stays behind in an OCI bundle's container: the tasks that join it are all
// it holds, they stay in the job's cgroups, and it ends with the last of them and with these
// descriptors. For a .sif image the helper says "ready hold" and is kept (Apptainer serves the
// image) until this object goes: its standard input then ends, and it stops Apptainer.
// A squashfs image's helper is kept the same way, and stops the image's FUSE daemons when it
// goes; it says "ready hold settings" and then hands the image's settings (Env, WorkingDir,
// Entrypoint) on one line of JSON for the tasks.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent/command.hpp"
#include "agent/container/container_spec.hpp"
#include "agent/image/settings.hpp"

namespace trellis::agent {

// What a task entering the container takes with it, and what it may say.
struct EnteredTask {
    TaskInImage task;                // its environment and command in the image
    std::string start_note;          // for the step's first task: where tasks start (start_directory_note)
    std::vector<std::string> notes;  // for each node's first task: the settings' notes
};

class HeldContainer {
public:
    HeldContainer() = default;
    HeldContainer(HeldContainer&& other) noexcept
        : namespaces_(std::exchange(other.namespaces_, {})),
          helper_(std::exchange(other.helper_, -1)),
          helper_input_(std::exchange(other.helper_input_, -1)),
          settings_(std::move(other.settings_)) {}
    HeldContainer& operator=(HeldContainer&& other) noexcept {
        std::swap(namespaces_, other.namespaces_);
        std::swap(helper_, other.helper_);
        std::swap(helper_input_, other.helper_input_);
        std::swap(settings_, other.settings_);
        return *this;
    }
    HeldContainer(const HeldContainer&) = delete;
    HeldContainer& operator=(const HeldContainer&) = delete;
    ~HeldContainer();

    // Runs `prepare` (the agent's command line, argv[0] absolute) as `user` and holds what it
    // made. Throws ContainerError with the agent's own message when it refused or failed.
    static HeldContainer make(const std::vector<std::string>& prepare, const Identity& user,
                              std::chrono::seconds limit = std::chrono::seconds(60));

    // In a task about to exec, single-threaded, as the job's user: the user namespace first
    // (its owner has every right inside it, which joining the others takes), then the rest;
    // then the first of `directories` it can enter (working_directory_candidates), else "/".
    // Returns the directory the task starts in. Throws ContainerError.
    std::string join(const std::vector<std::string>& directories) const;

    // A task entering the container, as both front ends do it (srun's task_init and the
    // ranks of trellis-agent launch), single-threaded, just before it execs: its directories,
    // environment and command for the image (task_in_image, from the current directory and
    // `choices`), join() and no_new_privs (setuid programs in the image give no privileges
    // back). Throws ContainerError.
    EnteredTask enter(const SettingsChoices& choices, const std::vector<std::string>& mount_destinations,
                      const std::function<bool(const std::string&)>& task_has, std::vector<std::string> command,
                      const std::string& image) const;

    // The image's settings as JSON (agent/image/settings.hpp), "" when the image has none.
    const std::string& image_settings() const { return settings_; }

private:
    std::vector<std::pair<int, int>> namespaces_;  // descriptor, CLONE_NEW*
    pid_t helper_ = -1;                            // a held helper ("ready hold")
    int helper_input_ = -1;                        // its standard input: it runs until this closes
    std::string settings_;
};

}  // namespace trellis::agent
