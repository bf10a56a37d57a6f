// SPDX-License-Identifier: Apache-2.0
// CDI specs (agent/container/cdi): strict reading of JSON and YAML, the version rules, the
// administrator-only folders, selecting a step's GPUs, merging edits and reading hooks.
#include "tests/catch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/container/cdi/apply.hpp"
#include "agent/container/cdi/selection.hpp"
#include "agent/container/cdi/spec_folders.hpp"
#include "agent/container/cdi/spec_parser.hpp"
#include "agent/container/cdi/step_edits.hpp"
#include "common/error.hpp"
#include "fixtures.hpp"

using namespace trellis::agent::cdi;
using Catch::Contains;
using trellis::Refused;
using trellis::UsageError;

namespace {

std::string fixture_text(const std::string& name) {
    std::ifstream in(trellis::test::source_dir() + "/tests/fixtures/cdi/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

Spec nvidia_spec() { return parse_spec(fixture_text("nvidia-ctk.yaml"), "nvidia-ctk.yaml"); }

SpecSet set_of(std::vector<Spec> specs) {
    SpecSet set;
    set.specs = std::move(specs);
    set.folders = {"/etc/cdi"};
    return set;
}

// A small spec around one device's edits, for the version and field tests.
std::string spec_with(const std::string& version, const std::string& device_edits, const std::string& name = "d0") {
    return "cdiVersion: \"" + version + "\"\nkind: example.com/dev\ndevices:\n- name: \"" + name +
           "\"\n  containerEdits:\n" + device_edits;
}

}  // namespace

TEST_CASE("a spec shaped like nvidia-ctk cdi generate's output is read in full") {
    auto spec = nvidia_spec();
    CHECK(spec.cdi_version == "0.5.0");
    CHECK(spec.kind == "nvidia.com/gpu");
    REQUIRE(spec.devices.size() == 5);
    CHECK(spec.devices[0].name == "0");
    CHECK(spec.devices[1].name == "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c");
    CHECK(spec.device("all")->edits.device_nodes.size() == 2);
    CHECK(spec.edits.device_nodes.size() == 4);
    CHECK(spec.edits.mounts.size() == 7);
    CHECK(spec.edits.mounts[0].options == std::vector<std::string>{"ro", "nosuid", "nodev", "rbind", "rprivate"});
    REQUIRE(spec.edits.hooks.size() == 5);
    CHECK(spec.edits.hooks[1].args[3] == "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so");
}

TEST_CASE("a JSON spec with tabs, escapes and every device node field is read") {
    auto spec = parse_spec(fixture_text("accel.json"), "accel.json");
    CHECK(spec.kind == "example.com/accel");
    CHECK(spec.has_annotations);
    const auto& node = spec.devices.at(0).edits.device_nodes.at(0);
    CHECK(node.host_path == "/dev/null");
    CHECK(node.major == 1);
    CHECK(node.minor == 3);
    CHECK(node.file_mode == 0666u);
    CHECK(node.permissions == "rw");
    CHECK(node.uid == 0u);
    CHECK(spec.edits.mounts.at(0).type == "bind");
}

TEST_CASE("YAML's octal file modes read as YAML 1.1 means them") {
    auto spec =
        parse_spec(spec_with("0.5.0", "    deviceNodes:\n    - path: /dev/x\n      fileMode: 0666\n"), "s.yaml");
    CHECK(spec.devices[0].edits.device_nodes[0].file_mode == 0666u);
}

TEST_CASE("an unknown field is an error naming the file, the line and the field") {
    auto text = spec_with("0.5.0", "    mounts:\n    - hostPath: /a\n      containerPath: /b\n      readOnly: true\n");
    CHECK_THROWS_WITH(parse_spec(text, "/etc/cdi/x.yaml"),
                      Contains("/etc/cdi/x.yaml:9: devices[0].containerEdits.mounts[0].readOnly: unknown field"));
    CHECK_THROWS_WITH(parse_spec("cdiVersion: 0.5.0\nkind: a.com/b\nvendor: x\ndevices: []\n", "f.yaml"),
                      Contains("vendor: unknown field"));
}

TEST_CASE("missing required fields, bad kinds and bad values are named") {
    CHECK_THROWS_WITH(parse_spec("kind: a.com/b\ndevices: [{name: x, containerEdits: {}}]\n", "f"),
                      Contains("cdiVersion is required"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    {}\n")
                                     .replace(spec_with("0.5.0", "    {}\n").find("example.com/dev"), 15, "nvidia.com"),
                                 "f"),
                      Contains("is not a kind"));
    CHECK_THROWS_WITH(parse_spec("cdiVersion: 0.5.0\nkind: a.com/b\ndevices: []\n", "f"),
                      Contains("at least one device"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    deviceNodes:\n    - path: /dev/x\n      major: many\n"), "f"),
                      Contains("\"many\" is not an integer"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    deviceNodes:\n    - path: /dev/x\n      type: z\n"), "f"),
                      Contains("not a device type"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    env: [NOEQUALS]\n"), "f"), Contains("is not NAME=VALUE"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    hooks:\n    - hookName: whenever\n      path: /x\n"), "f"),
                      Contains("is not an OCI hook point"));
    CHECK_THROWS_WITH(parse_spec("{not: [closed", "broken.json"), Contains("broken.json:"));
    CHECK_THROWS_WITH(parse_spec(fixture_text("nvidia-ctk.yaml") + "\n---\nkind: x\n", "two.yaml"),
                      Contains("a second document"));
}

TEST_CASE("cdiVersion must be a released version and at least what the fields used need") {
    CHECK_THROWS_WITH(
        parse_spec(spec_with("0.4.0", "    deviceNodes:\n    - path: /dev/x\n      hostPath: /dev/y\n"), "f"),
        Contains("cdiVersion 0.4.0 is too low: deviceNodes hostPath needs at least 0.5.0"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.4.0", "    {}\n", "0"), "f"),
                      Contains("not starting with a letter needs at least 0.5.0"));
    CHECK_THROWS_WITH(
        parse_spec(spec_with("0.3.0", "    mounts: [{hostPath: /a, containerPath: /b, type: bind}]\n"), "f"),
        Contains("mounts type needs at least 0.4.0"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.6.0", "    additionalGids: [44]\n"), "f"),
                      Contains("needs at least 0.7.0"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.5.0", "    {}\n") + "annotations: {a: b}\n", "f"),
                      Contains("annotations needs at least 0.6.0"));
    CHECK_THROWS_WITH(parse_spec(spec_with("0.9.0", "    {}\n"), "f"), Contains("not a released CDI version"));
    CHECK_THROWS_WITH(parse_spec(spec_with("five", "    {}\n"), "f"), Contains("is not a version"));
    CHECK(parse_spec(spec_with("v1.1.0", "    {}\n"), "f").cdi_version == "v1.1.0");
    CHECK(parse_spec(spec_with("0.3.0", "    env: [A=1]\n"), "f").devices[0].edits.env[0] == "A=1");
}

TEST_CASE("a file that aliases expand into a huge tree is refused") {
    std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for (char c = 'b'; c <= 'h'; ++c)
        text += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
                ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
                char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
    CHECK_THROWS_WITH(parse_spec(text, "laughs.yaml"), Contains("too many nodes"));
}

TEST_CASE("the step's GPUs select their devices by index, else by UUID") {
    auto set = set_of({nvidia_spec()});
    CHECK(step_gpu_devices(set, {{1, ""}}) == std::vector<std::string>{"nvidia.com/gpu=1"});
    CHECK(step_gpu_devices(set, {{0, ""}, {1, ""}}) ==
          std::vector<std::string>{"nvidia.com/gpu=0", "nvidia.com/gpu=1"});
    // A spec generated with UUID names only: the UUID Slurm or NVML gave matches.
    CHECK(step_gpu_devices(set, {{5, "GPU-9b3a7e21-5c4d-2f10-8e6a-0d1c2b3a4f5e"}}) ==
          std::vector<std::string>{"nvidia.com/gpu=GPU-9b3a7e21-5c4d-2f10-8e6a-0d1c2b3a4f5e"});
    CHECK(step_gpu_devices(set, {{5, "4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"}}) ==
          std::vector<std::string>{"nvidia.com/gpu=GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"});
    CHECK_THROWS_WITH(step_gpu_devices(set, {{3, ""}}),
                      Contains("no CDI device for the step's GPU 3: nvidia.com/gpu has 0, GPU-4cf8db2d"));
    CHECK(step_gpu_devices(set_of({}), {{0, ""}}).empty());
    CHECK_THAT(no_driver_libraries_warning({"/etc/cdi", "/var/run/cdi"}),
               Contains("no CDI spec for nvidia.com/gpu is installed in /etc/cdi, /var/run/cdi") &&
                   Contains("no driver library"));
}

TEST_CASE("edits of the selected devices merge with the spec's common edits, hooks read as data") {
    auto set = set_of({nvidia_spec()});
    auto edits = resolve_edits(set, {"nvidia.com/gpu=1"}, {});
    CHECK(edits.devices == std::vector<std::string>{"nvidia.com/gpu=1"});
    std::vector<std::string> nodes;
    for (const auto& node : edits.device_nodes) nodes.push_back(node.container_path);
    CHECK(nodes == std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                            "/dev/nvidia-uvm-tools", "/dev/nvidiactl"});
    CHECK(edits.device_nodes[0].device);
    CHECK(edits.env ==
          std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_CTK_LIBCUDA_DIR=/usr/lib/x86_64-linux-gnu"});
    REQUIRE(edits.mounts.size() == 7);
    CHECK(edits.mounts[0].container_path == "/usr/bin/nvidia-smi");  // the shallowest first
    const auto& libcuda = *std::find_if(edits.mounts.begin(), edits.mounts.end(), [](const BindMount& m) {
        return m.container_path.ends_with("libcuda.so.550.54.15");
    });
    CHECK((libcuda.read_only && libcuda.nosuid && libcuda.nodev && libcuda.recursive && !libcuda.noexec));
    REQUIRE(edits.symlinks.size() == 2);
    CHECK(edits.symlinks[0].target == "libcuda.so.1");
    CHECK(edits.symlinks[0].link == "/usr/lib/x86_64-linux-gnu/libcuda.so");
    CHECK(edits.ld_folders == std::vector<std::string>{"/usr/lib/x86_64-linux-gnu"});
    REQUIRE(edits.notes.size() == 3);
    CHECK_THAT(edits.notes[0], Contains("enable-cuda-compat skipped"));
    CHECK_THAT(edits.notes[1], Contains("disable-device-node-modification skipped"));
    CHECK_THAT(edits.notes[2], Contains("update-application-profile skipped"));
    // Two devices of one spec: its common edits once.
    auto both = resolve_edits(set, {"nvidia.com/gpu=0", "nvidia.com/gpu=1"}, {});
    CHECK(both.device_nodes.size() == 6);
    CHECK(both.symlinks.size() == 2);
}

TEST_CASE("an unknown kind or device is one error naming what the specs have") {
    auto set = set_of({nvidia_spec()});
    CHECK_THROWS_WITH(
        resolve_edits(set, {"amd.com/gpu=0"}, {}),
        Contains("unknown CDI kind amd.com/gpu in amd.com/gpu=0: the specs in /etc/cdi have nvidia.com/gpu"));
    CHECK_THROWS_WITH(resolve_edits(set, {"nvidia.com/gpu=7"}, {}),
                      Contains("unknown CDI device nvidia.com/gpu=7: nvidia.com/gpu has 0, GPU-"));
    CHECK_THROWS_AS(resolve_edits(set, {"nvidia.com/gpu"}, {}), UsageError);
}

TEST_CASE("hooks unknown to trellis are refused unless the administrator allows them; then they are noted") {
    auto hook = spec_with("0.5.0",
                          "    hooks:\n    - hookName: createContainer\n      path: /usr/local/bin/odd-hook\n"
                          "      args: [odd-hook, --all]\n");
    auto set = set_of({parse_spec(hook, "odd.yaml")});
    CHECK_THROWS_AS(resolve_edits(set, {"example.com/dev=d0"}, {}), Refused);
    CHECK_THROWS_WITH(
        resolve_edits(set, {"example.com/dev=d0"}, {}),
        Contains("odd.yaml: CDI hook \"/usr/local/bin/odd-hook --all\" (createContainer) is unknown to trellis") &&
            Contains("allowed_cdi_hooks"));
    auto allowed = resolve_edits(set, {"example.com/dev=d0"}, {"/usr/local/bin/odd-hook"});
    REQUIRE(allowed.notes.size() == 1);
    CHECK_THAT(allowed.notes[0], Contains("not run: it is in allowed_cdi_hooks"));
    // An NVIDIA subcommand trellis does not know is unknown too.
    auto chmod = spec_with("0.5.0",
                           "    hooks:\n    - hookName: createContainer\n      path: /usr/bin/nvidia-cdi-hook\n"
                           "      args: [nvidia-cdi-hook, chmod, --mode, '755', --path, /dev/dri]\n");
    CHECK_THROWS_AS(resolve_edits(set_of({parse_spec(chmod, "c.yaml")}), {"example.com/dev=d0"}, {}), Refused);
}

TEST_CASE("nvidia-ctk's older hook form and --name=value options are read; bad arguments refused") {
    auto old = spec_with(
        "0.5.0",
        "    hooks:\n    - hookName: createContainer\n      path: /usr/bin/nvidia-ctk\n"
        "      args: [nvidia-ctk, hook, create-symlinks, '--link=libcuda.so.1::/usr/lib64/libcuda.so']\n"
        "    - hookName: createContainer\n      path: /usr/bin/nvidia-ctk\n"
        "      args: [nvidia-ctk, hook, update-ldcache, --ldconfig-path, /sbin/ldconfig, --folder=/usr/lib64]\n");
    auto edits = resolve_edits(set_of({parse_spec(old, "old.yaml")}), {"example.com/dev=d0"}, {});
    REQUIRE(edits.symlinks.size() == 1);
    CHECK(edits.symlinks[0].link == "/usr/lib64/libcuda.so");
    CHECK(edits.ld_folders == std::vector<std::string>{"/usr/lib64"});
    auto bad_link = spec_with("0.5.0",
                              "    hooks:\n    - hookName: createContainer\n      path: /usr/bin/nvidia-cdi-hook\n"
                              "      args: [nvidia-cdi-hook, create-symlinks, --link, libcuda.so.1]\n");
    CHECK_THROWS_WITH(resolve_edits(set_of({parse_spec(bad_link, "b.yaml")}), {"example.com/dev=d0"}, {}),
                      Contains("is not TARGET::LINK"));
    auto bad_option = spec_with("0.5.0",
                                "    hooks:\n    - hookName: createContainer\n      path: /usr/bin/nvidia-cdi-hook\n"
                                "      args: [nvidia-cdi-hook, update-ldcache, --everything, x]\n");
    CHECK_THROWS_WITH(resolve_edits(set_of({parse_spec(bad_option, "o.yaml")}), {"example.com/dev=d0"}, {}),
                      Contains("cannot read \"--everything\" (accepted: --folder VALUE, --ldconfig-path VALUE)"));
}

TEST_CASE("what a user-namespace container cannot do is refused with the reason") {
    auto tmpfs = spec_with("0.5.0", "    mounts: [{hostPath: tmpfs, containerPath: /x, type: tmpfs}]\n");
    CHECK_THROWS_WITH(resolve_edits(set_of({parse_spec(tmpfs, "t.yaml")}), {"example.com/dev=d0"}, {}),
                      Contains("only bind mounts are accepted"));
    auto option = spec_with("0.5.0", "    mounts: [{hostPath: /a, containerPath: /x, options: [shared]}]\n");
    CHECK_THROWS_WITH(resolve_edits(set_of({parse_spec(option, "o.yaml")}), {"example.com/dev=d0"}, {}),
                      Contains("option \"shared\" is not accepted"));
    auto rdt = spec_with("0.7.0", "    intelRdt: {closID: x}\n");
    CHECK_THROWS_WITH(resolve_edits(set_of({parse_spec(rdt, "r.yaml")}), {"example.com/dev=d0"}, {}),
                      Contains("intelRdt cannot be applied"));
    auto gids = spec_with("0.7.0", "    additionalGids: [44, 109]\n");
    auto edits = resolve_edits(set_of({parse_spec(gids, "g.yaml")}), {"example.com/dev=d0"}, {});
    REQUIRE(edits.notes.size() == 1);
    CHECK_THAT(edits.notes[0], Contains("additionalGids 44,109 not added"));
}

TEST_CASE("device nodes are bound from the host only: one given by major/minor alone is refused") {
    BindMount null_node{.host_path = "/dev/null",
                        .container_path = "/dev/x",
                        .device = true,
                        .major = 1,
                        .minor = 3,
                        .type = "c",
                        .origin = "s.yaml"};
    CHECK_NOTHROW(check_host_device_node(null_node));
    auto absent = null_node;
    absent.host_path = absent.container_path = "/dev/trellis-no-such-node";
    absent.major = 195;
    absent.minor = 7;
    CHECK_THROWS_WITH(check_host_device_node(absent),
                      Contains("s.yaml: CDI device node /dev/trellis-no-such-node (195:7) is not on the host") &&
                          Contains("mknod is not allowed in a user namespace"));
    auto wrong = null_node;
    wrong.minor = 5;
    CHECK_THROWS_WITH(check_host_device_node(wrong), Contains("on the host is 1:3"));
    auto block = null_node;
    block.type = "b";
    CHECK_THROWS_WITH(check_host_device_node(block), Contains("has type b"));
    auto file = null_node;
    file.host_path = "/etc/hostname";
    CHECK_THROWS_WITH(check_host_device_node(file), Contains("is not a device node"));
}

// What apply_edits asks of a container's root, in order, without a root: the container's
// Rootfs does the same calls with real mounts (tests/container/cdi_apply_test.sh).
class RecordingEditor : public RootEditor {
public:
    std::vector<std::string> calls;
    void bind(const BindMount& mount) override {
        calls.push_back("bind " + mount.host_path + " " + mount.container_path);
    }
    void symlink(const Symlink& link) override { calls.push_back("link " + link.link + " -> " + link.target); }
    void write_file(const std::string& path, const std::string& content) override {
        calls.push_back("write " + path + " " + std::to_string(content.size()) + " bytes");
        written = content;
    }
    void build_ld_cache(const std::vector<std::string>& folders) override {
        calls.push_back("ldcache " + std::to_string(folders.size()) + " folder(s)");
    }
    std::string written;
};

TEST_CASE("edits are applied in order: device nodes, mounts, links, then the ld.so.cache") {
    ResolvedEdits edits;
    edits.devices = {"vendor.com/gpu=0"};
    edits.device_nodes = {BindMount{.host_path = "/dev/null",
                                    .container_path = "/dev/gpu0",
                                    .device = true,
                                    .major = 1,
                                    .minor = 3,
                                    .type = "c",
                                    .origin = "s.yaml"}};
    BindMount library;
    library.host_path = library.container_path = "/usr/lib/x";
    library.read_only = true;
    BindMount inner;
    inner.host_path = inner.container_path = "/usr/lib/x/y";
    edits.mounts = {library, inner};
    edits.symlinks = {Symlink{.target = "libx.so.1", .link = "/usr/lib/libx.so"}};
    edits.ld_folders = {"/usr/lib/x"};
    RecordingEditor root;
    apply_edits(edits, root);
    CHECK(root.calls == std::vector<std::string>{"bind /dev/null /dev/gpu0", "bind /usr/lib/x /usr/lib/x",
                                                 "bind /usr/lib/x/y /usr/lib/x/y", "link /usr/lib/libx.so -> libx.so.1",
                                                 std::string("write ") + ld_conf_file + " 85 bytes",
                                                 "ldcache 1 folder(s)"});
    CHECK(root.written.ends_with("vendor.com/gpu=0\n/usr/lib/x\n"));
    // A device node the host lacks stops everything before the first bind.
    edits.device_nodes[0].host_path = "/dev/trellis-no-such-node";
    RecordingEditor refused;
    CHECK_THROWS_AS(apply_edits(edits, refused), Refused);
    CHECK(refused.calls.empty());
    // Without update-ldcache no file is written and no cache built.
    edits.device_nodes.clear();
    edits.ld_folders.clear();
    RecordingEditor plain;
    apply_edits(edits, plain);
    CHECK(plain.calls.size() == 3);
}

TEST_CASE("spec folders: JSON and YAML read in order, a later folder wins, others' folders and files refused") {
    trellis::test::Scratch scratch;
    auto first = scratch.make("etc-cdi"), second = scratch.make("run-cdi");
    std::filesystem::copy_file(trellis::test::source_dir() + "/tests/fixtures/cdi/nvidia-ctk.yaml",
                               first / "nvidia.yaml");
    std::filesystem::copy_file(trellis::test::source_dir() + "/tests/fixtures/cdi/accel.json", first / "accel.json");
    scratch.write("etc-cdi/notes.txt", "not a spec");
    auto replacement = spec_with("0.5.0", "    env: [REPLACED=1]\n", "1");
    std::ofstream(second / "nvidia.yml") << replacement.replace(replacement.find("example.com/dev"), 15,
                                                                "nvidia.com/gpu");
    for (const auto& dir : {first, second}) chmod(dir.c_str(), 0755);
    for (const auto& entry : std::filesystem::directory_iterator(first)) chmod(entry.path().c_str(), 0644);
    chmod((second / "nvidia.yml").c_str(), 0644);

    auto set = load_specs({first.string(), (scratch.path / "absent").string(), second.string()}, geteuid());
    REQUIRE(set.specs.size() == 3);
    CHECK(set.specs[0].kind == "example.com/accel");  // accel.json before nvidia.yaml
    CHECK(set.folders == std::vector<std::string>{first.string(), second.string()});
    CHECK(set.find("nvidia.com/gpu", "1")->origin == (second / "nvidia.yml").string());
    CHECK(set.find("nvidia.com/gpu", "0")->origin == (first / "nvidia.yaml").string());
    REQUIRE(set.notes.size() == 1);
    CHECK_THAT(set.notes[0], Contains("nvidia.com/gpu=1: " + (second / "nvidia.yml").string() + " replaces"));
    CHECK(resolve_edits(set, {"nvidia.com/gpu=1"}, {}).env == std::vector<std::string>{"REPLACED=1"});

    // Writable by others: refused, naming the folder and what is accepted.
    chmod(second.c_str(), 0777);
    CHECK_THROWS_WITH(load_specs({second.string()}, geteuid()),
                      Contains("CDI folder " + second.string() + " is owned by uid") && Contains("mode 0777") &&
                          Contains("writable by no one else"));
    chmod(second.c_str(), 0755);
    chmod((second / "nvidia.yml").c_str(), 0666);
    CHECK_THROWS_WITH(load_specs({second.string()}, geteuid()),
                      Contains("CDI spec " + (second / "nvidia.yml").string()));
    chmod((second / "nvidia.yml").c_str(), 0644);
    // Owned by someone else than the trusted owner (root in production).
    CHECK_THROWS_AS(load_specs({second.string()}, geteuid() + 1), Refused);
    // A symbolic link named as a spec is not followed.
    std::filesystem::create_symlink(first / "accel.json", second / "link.json");
    CHECK_THROWS_WITH(load_specs({second.string()}, geteuid()), Contains("a symbolic link"));
    std::filesystem::remove(second / "link.json");
    // Two files of one folder defining the same device: neither wins.
    std::filesystem::copy_file(first / "nvidia.yaml", first / "nvidia-copy.yaml");
    chmod((first / "nvidia-copy.yaml").c_str(), 0644);
    CHECK_THROWS_WITH(load_specs({first.string()}, geteuid()), Contains("is defined in both"));
    CHECK_THROWS_WITH(load_specs({"etc/cdi"}, geteuid()), Contains("not an absolute path"));
}

TEST_CASE("a step's CDI edits: none without GPUs, a warning without a spec, the plan's NVIDIA GPUs by index") {
    trellis::config::ContainerConfig config;
    trellis::test::Scratch scratch;
    config.cdi_dirs = {(scratch.path / "no-etc-cdi").string(), (scratch.path / "no-run-cdi").string()};
    auto none = step_cdi_edits(config, {});
    CHECK(!none.edits);
    CHECK(!none.warning);
    auto bare = step_cdi_edits(config, {{0, ""}});
    CHECK(!bare.edits);
    REQUIRE(bare.warning);
    CHECK_THAT(*bare.warning, Contains("no driver library"));

    trellis::topology::Plan plan;
    plan.tasks.resize(2);
    trellis::topology::Gpu second, first, amd;
    second.vendor_index = 1;
    first.vendor_index = 0;
    amd.vendor = trellis::topology::GpuVendor::amd;
    plan.tasks[0].visible = {{second, 0}, {first, 1}};
    plan.tasks[1].visible = {{first, 0}, {amd, 1}};
    auto gpus = plan_step_gpus(plan);
    REQUIRE(gpus.size() == 2);
    CHECK(gpus[0].index == 0);
    CHECK(gpus[1].index == 1);
}

TEST_CASE("compact JSON, as json.Marshal writes it, with nulls for absent values") {
    auto spec = parse_spec(
        R"({"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"0","containerEdits":{"deviceNodes":)"
        R"([{"path":"/dev/nvidia0","hostPath":null,"major":195,"minor":0}],"env":null}}],)"
        R"("containerEdits":{"env":["NVIDIA_VISIBLE_DEVICES=void"],"mounts":[{"hostPath":"/a:b","containerPath":"/a:b"}]}})",
        "compact.json");
    CHECK(spec.devices[0].edits.device_nodes[0].major == 195);
    CHECK(spec.devices[0].edits.device_nodes[0].host_path.empty());
    CHECK(spec.edits.mounts[0].host_path == "/a:b");
    CHECK_THROWS_WITH(
        parse_spec(
            R"({"cdiVersion":"0.5.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{}}],"kind":"c.com/d"})",
            "dup.json"),
        Contains("field kind given twice"));
    CHECK_THROWS_WITH(
        parse_spec(
            R"({"cdiVersion":"0.5.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"deviceNodes":[{"path":"/d","major":"195"}]}}]})",
            "q.json"),
        Contains("expected a number"));
}
