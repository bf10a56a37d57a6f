// SPDX-License-Identifier: Apache-2.0
// trellis-agent: the per-node agent. `launch` starts a node's ranks (natively or in a
// container), `prepare` makes a step's container for the plugin as the job's user, `resolve`
// pins a registry image's tag to its digest, `check` reports the node's health.
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "agent/image/cache.hpp"
#include "agent/image/broadcast.hpp"
#include "agent/image/import.hpp"
#include "agent/image/registry_digest.hpp"
#include "agent/image/settings.hpp"
#include "agent/container/sif_container.hpp"
#include "agent/container/step_container.hpp"
#include "agent/health/node_check.hpp"
#include "agent/launch/launch_command.hpp"
#include "common/cli.hpp"
#include "config.h"
#include "common/error.hpp"

using namespace trellis;
using namespace trellis::agent;

namespace {

const char* usage =
    "usage: trellis-agent COMMAND [OPTIONS]\n"
    "\n"
    "  launch   start this node's ranks of a job, bound to their GPUs, HCAs and CPUs, natively\n"
    "           or in a container; one failed rank stops the others\n"
    "  prepare  as the calling user (never root): make a step's container around this process,\n"
    "           print \"ready\" (or \"ready hold\") and wait until stdin ends; the plugin runs it\n"
    "  import   as the calling user (never root): bring a docker:// image or an image archive into\n"
    "           this node's image cache as a squashfs; print its path, its settings' and its digest\n"
    "  cache-folder  as root: make the node's image cache and the named users' folders in it\n"
    "  resolve  check an image against the configuration and print it, a registry image's tag\n"
    "           pinned to its digest (as srun hands it to every node)\n"
    "  check    GPUs, HCA ports, GPUDirect RDMA, IPoIB, containers; exit status 1 on a problem\n"
    "\n"
    "trellis-agent COMMAND --help shows a command's options. See trellis-agent(8).\n";

cli::OptionTable prepare_table(StepContainerRequest& request, std::string& config_path) {
    cli::OptionTable table("trellis-agent prepare --help");
    table.value("--image", "PATH", "the OCI bundle or .sif image (required)", [&](auto& v) { request.image = v; })
        .value("--mounts", "SPEC", "the user's SRC:DST[:ro],... mounts", [&](auto& v) { request.user_mounts = v; })
        .value("--system-mount", "PATH[:ro]", "a site mount from the configuration (repeatable)",
               [&](auto& v) { request.system_mounts.push_back(v); })
        .value("--device", "PATH", "a device file the step may open (repeatable)",
               [&](auto& v) { request.devices.push_back(v); })
        .value("--config", "FILE", "the configuration (default: the installed trellis.toml)",
               [&](auto& v) { config_path = v; })
        .value("--gpu", "INDEX", "a GPU of the step on this node, by index in PCI order, for CDI (repeatable)",
               [&](auto& v) { request.gpus.push_back(cli::parse_int<int>(v, "--gpu", 0)); })
        .value("--auth-file", "PATH", "the job's REGISTRY_AUTH_FILE, for an import",
               [&](auto& v) { request.auth_file = v; })
        .value("--sent", "JOB.STEP", "the step whose image srun sent to this node's cache (sbcast), taken when there",
               [&](auto& v) {
                   if (!is_step_name(v))
                       throw UsageError("--sent '" + v + "': expected JOB.STEP, Slurm's numbers (e.g. 4242.0)");
                   request.sent = v;
               })
        .flag("--writable", "a throw-away writable root", [&] { request.writable = true; });
    return table;
}

std::string prepare_help() {
    StepContainerRequest request;
    std::string config_path;
    return "usage: trellis-agent prepare --image PATH [OPTIONS]\n\n" + prepare_table(request, config_path).help();
}

// Whether a tracer is attached to this process (TracerPid in /proc/self/status).
bool being_traced() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("TracerPid:")) return std::stol(line.substr(10)) != 0;
    return false;
}

int prepare(const std::vector<std::string>& args) {
    StepContainerRequest request;
    std::string config_path;
    prepare_table(request, config_path).parse(args);
    if (request.image.empty()) throw UsageError("prepare needs --image");
    // Slurm signals every child of slurmstepd with the step's tasks (scancel's SIGTERM, srun
    // --signal, the time limit's warning): this one serves their root and must outlast them.
    // It ends when its standard input does, or by SIGKILL. A handler, not SIG_IGN, so that the
    // programs it runs get the default again.
    struct sigaction keep_serving {};
    keep_serving.sa_handler = [](int) {};
    keep_serving.sa_flags = SA_RESTART;
    for (int number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM})
        ::sigaction(number, &keep_serving, nullptr);
    auto config = config::load_agent_config(config_path);
    auto spec = checked_container_spec(request, config);
    // A registry image or an archive becomes a squashfs in the user's cache on this node
    // first; the lock `imported` holds keeps it from eviction while this step uses it.
    std::optional<ImportedImage> imported;
    if (spec.image.kind == ImageKind::registry || spec.image.kind == ImageKind::archive) {
        if (!request.auth_file.empty()) ::setenv("REGISTRY_AUTH_FILE", request.auth_file.c_str(), 1);
        imported = import_image(spec.image, config.container, std::cerr, {"", request.sent});
        spec.image.kind = ImageKind::squashfs;
        spec.image.path = imported->squashfs;
        spec.image.settings = imported->settings;
        spec.image.files.reset();  // the user's own cache folder, 0700: read by path
        // The first step on a node waits for the import: its first task says why.
        if (!imported->cached) {
            char seconds[32];
            std::snprintf(seconds, sizeof seconds, "%.1f", imported->seconds);
            spec.notes.push_back("imported " + spec.image.reference.text() + " into this node's image cache in " +
                                 seconds + " s");
        }
    }
    // Read as the user, before the container covers the image's folder.
    std::string settings =
        one_line_settings(spec.image.files ? read_settings(spec.image.files->settings, spec.image.settings)
                                           : read_settings_file(spec.image.settings),
                          spec.cdi ? spec.cdi->env : std::vector<std::string>{}, spec.notes);
    auto helpers = enter_container(spec);
    // "ready hold": the caller keeps this end open while the container is used (Apptainer or
    // squashfuse must go on running); "ready": only until it has opened the namespaces. A
    // squashfs image's settings (and CDI's variables and notes) follow on one line, for the tasks.
    if (spec.image.kind == ImageKind::squashfs || spec.cdi || !spec.notes.empty())
        std::printf("ready hold settings\n%s\n", settings.c_str());
    else
        std::fputs(helpers.any() ? "ready hold\n" : "ready\n", stdout);
    std::fflush(stdout);
    // A line on stdin: the caller holds the namespaces. From then on the job's user, who may
    // trace their own processes, cannot trace this one (it holds the image's descriptors and
    // serves every task of the step); before, the caller (as the user) had to open its
    // /proc/PID/ns.
    char buffer[64];
    for (bool traceable = true;;) {
        ssize_t n = ::read(0, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (!traceable) continue;
        traceable = ::prctl(PR_SET_DUMPABLE, 0) != 0;
        // One who attached while it was traceable (during an import) would stay attached.
        if (!traceable && being_traced()) {
            helpers.stop();
            throw ContainerError("prepare is being traced (ptrace): the container is not served so");
        }
    }
    helpers.stop();
    return 0;
}

cli::OptionTable import_table(std::string& config_path, std::string& folder) {
    cli::OptionTable table("trellis-agent import --help");
    table
        .value("--config", "FILE", "the configuration (default: the installed trellis.toml)",
               [&](auto& v) { config_path = v; })
        .value("--folder", "DIR",
               "a folder of yours instead of this node's image cache (srun's host, "
               "which sends the image to the step's nodes)",
               [&](auto& v) { folder = v; });
    return table;
}

std::string import_help() {
    std::string config_path, folder;
    return "usage: trellis-agent import REFERENCE [--config FILE] [--folder DIR]\n\n"
           "REFERENCE: docker://[HOST[:PORT]/]REPOSITORY[:TAG|@sha256:DIGEST], oci-archive:PATH or\n"
           "docker-archive:PATH. Progress goes to stderr; stdout gets four lines:\n"
           "  squashfs PATH\n  settings PATH\n  digest sha256:HEX\n  cached yes|no\n\n" +
           import_table(config_path, folder).help();
}

// The reference comes first or after the options.
int import_command(const std::vector<std::string>& args) {
    std::string config_path, folder, reference;
    std::vector<std::string> options = args;
    if (!options.empty() && !options[0].starts_with("-")) {
        reference = options[0];
        options.erase(options.begin());
    }
    auto rest = import_table(config_path, folder).parse(options, cli::OptionTable::Rest::command);
    if (reference.empty() && rest.size() == 1) reference = rest[0], rest.clear();
    if (reference.empty() || !rest.empty())
        throw UsageError("import takes one image reference, then its options (see trellis-agent import --help)");
    auto config = config::load_agent_config(config_path);
    // The site's policy as for a step (the user's own cache may still hold any image they
    // made: the lists are the site's policy over what steps ask for, not a boundary).
    if (parse_image_reference(reference).kind == ReferenceKind::path)
        throw UsageError("'" + reference +
                         "' is a file on the node, not an image to import (accepted: "
                         "docker://HOST/REPOSITORY[:TAG|@sha256:DIGEST], oci-archive:PATH, docker-archive:PATH)");
    ImportedImage image =
        import_image(check_image(reference, config.container), config.container, std::cerr, {folder, ""});
    std::printf("squashfs %s\nsettings %s\ndigest %s\ncached %s\n", image.squashfs.c_str(), image.settings.c_str(),
                image.digest.c_str(), image.cached ? "yes" : "no");
    return 0;
}

cli::OptionTable cache_folder_table(std::string& config_path) {
    cli::OptionTable table("trellis-agent cache-folder --help");
    table.value("--config", "FILE", "the configuration (default: the installed trellis.toml)",
                [&](auto& v) { config_path = v; });
    return table;
}

std::string cache_folder_help() {
    std::string config_path;
    return "usage: trellis-agent cache-folder [--config FILE] [USER...]\n\n"
           "As root: makes image_cache (root's, 0755) when missing, makes an older trellis's 1777 one\n"
           "0755, then each USER's folder (a name or a uid) in it. The plugin makes a user's folder\n"
           "itself at the start of a step that imports; the package runs this without USER.\n\n" +
           cache_folder_table(config_path).help();
}

int cache_folder(const std::vector<std::string>& args) {
    std::string config_path;
    auto users = cache_folder_table(config_path).parse(args, cli::OptionTable::Rest::command);
    auto config = config::load_agent_config(config_path);
    if (auto note = make_cache_top(config.container); !note.empty()) std::printf("%s\n", note.c_str());
    for (const auto& user : users) {
        const passwd* entry = ::getpwnam(user.c_str());
        if (!entry && !user.empty() && user.find_first_not_of("0123456789") == std::string::npos)
            entry = ::getpwuid(uid_t(std::stoul(user)));
        if (!entry) throw UsageError("no user '" + user + "' (accepted: a user name or uid known to this node)");
        auto note = make_user_cache_folder(config.container, entry->pw_uid, entry->pw_gid);
        std::printf("%s/%u%s%s\n", config.container.image_cache.c_str(), unsigned(entry->pw_uid),
                    note.empty() ? "" : ": ", note.c_str());
    }
    return 0;
}

cli::OptionTable resolve_table(std::string& image, std::string& config_path) {
    cli::OptionTable table("trellis-agent resolve --help");
    table
        .value("--image", "IMAGE", "docker://..., oci-archive:PATH, docker-archive:PATH or a path (required)",
               [&](auto& v) { image = v; })
        .value("--config", "FILE", "the configuration (default: the installed trellis.toml)",
               [&](auto& v) { config_path = v; });
    return table;
}

std::string resolve_help() {
    std::string image, config_path;
    return "usage: trellis-agent resolve --image IMAGE [OPTIONS]\n\n" + resolve_table(image, config_path).help();
}

// For batch scripts that start `launch --image` on several nodes: one lookup, one digest.
int resolve(const std::vector<std::string>& args) {
    std::string image, config_path;
    resolve_table(image, config_path).parse(args);
    if (image.empty()) throw UsageError("resolve needs --image");
    auto config = config::load_agent_config(config_path);
    std::printf("%s\n", checked_and_pinned(image, config.container).c_str());
    return 0;
}

struct Command {
    const char* name;
    int (*run)(const std::vector<std::string>&);
    std::string (*help)();
};

const Command commands[] = {
    {"launch", launch_command, launch_help},           {"prepare", prepare, prepare_help},
    {"import", import_command, import_help},           {"resolve", resolve, resolve_help},
    {"cache-folder", cache_folder, cache_folder_help}, {"check", check_command, check_help},
};

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::fputs(usage, args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::printf("trellis-agent %s\nconfiguration: %s\n", PACKAGE_VERSION, TRELLIS_CONFIG_PATH);
        return 0;
    }
    std::string name = args[0];
    args.erase(args.begin());
    auto command = std::find_if(std::begin(commands), std::end(commands), [&](auto& c) { return name == c.name; });
    if (command == std::end(commands)) {
        std::fprintf(
            stderr,
            "trellis-agent: unknown command '%s' (accepted: launch, prepare, import, resolve, cache-folder, check)\n",
            name.c_str());
        return 2;
    }
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
        std::fputs(command->help().c_str(), stdout);
        return 0;
    }
    try {
        return command->run(args);
    } catch (const std::exception& error) {
        return trellis::report_error("trellis-agent " + name + ": ", error);
    }
}
