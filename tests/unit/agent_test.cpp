// SPDX-License-Identifier: Apache-2.0
// The agent's pure parts: mount specifications and the destinations no user may take, the
// image and mount policy, what an image may hold, Apptainer's command line, device files,
// launch options, and the node check on fixture topologies.
#include "tests/catch.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/binding/step_plan.hpp"
#include "agent/container/devices.hpp"
#include "agent/image/policy.hpp"
#include "agent/container/sif_container.hpp"
#include "agent/health/node_check.hpp"
#include "agent/launch/launch_options.hpp"
#include "agent/launch/plugin_config.hpp"
#include "fixtures.hpp"
#include "topology/discovery.hpp"

using namespace trellis::agent;
using namespace trellis::config;
namespace fs = std::filesystem;

using trellis::test::Scratch;

TEST_CASE("mount specifications: SRC:DST[:ro|rw], SRC alone, and clear refusals") {
    auto mounts = parse_mounts("/data:/data:ro,/scratch/u:/work,/opt/x");
    REQUIRE(mounts.size() == 3);
    CHECK(mounts[0].read_only);
    CHECK(mounts[1].destination == "/work");
    CHECK_FALSE(mounts[1].read_only);
    CHECK(mounts[2].destination == "/opt/x");
    CHECK(format_mount(mounts[0]) == "/data:/data:ro");
    CHECK(parse_mounts("").empty());
    CHECK_THROWS_WITH(parse_mounts("data:/data"), Catch::Contains("not an absolute path"));
    CHECK_THROWS_WITH(parse_mounts("/a:/b:rx"), Catch::Contains("'rx' is not ro or rw"));
    CHECK_THROWS_WITH(parse_mounts("/a:/../etc"), Catch::Contains("without '..'"));
    CHECK_THROWS_WITH(parse_mounts("/a:/"), Catch::Contains("not accepted: /"));
    CHECK_THROWS_WITH(parse_mounts("/a,,/b"), Catch::Contains("empty entry"));
    CHECK_THROWS_WITH(parse_mounts("/a:/b:ro:x"), Catch::Contains("accepted: SRC:DST[:ro|rw]"));
}

TEST_CASE("mount destinations the container provides are refused, and control characters anywhere") {
    // Over the process the container is entered through, its device files, its process table.
    for (const char* taken : {"/dev/.trellis-pause", "/dev", "/dev/", "/dev/shm", "/proc", "/proc/1", "/sys",
                              "/sys/fs/cgroup", "/etc/hosts", "/etc/resolv.conf", "/etc", "/", "//dev"})
        CHECK_THROWS_WITH(parse_mounts(std::string("/scratch/a:") + taken), Catch::Contains("not accepted"));
    for (const char* fine : {"/devices", "/data", "/etc/myapp", "/sysroot", "/tmp/x", "/var/tmp"})
        CHECK_NOTHROW(parse_mounts(std::string("/scratch/a:") + fine));
    CHECK_THROWS_WITH(parse_mounts("/a:/b\nerror: forged"), Catch::Contains("control character"));
    CHECK_THROWS_WITH(parse_mounts(std::string("/a\tb:/b")), Catch::Contains("control character"));
}

TEST_CASE("images: allowed patterns, OCI bundles and .sif files, missing or odd paths refused") {
    Scratch scratch;
    auto bundle = scratch.make("images/train");
    fs::create_directories(bundle / "rootfs");
    std::ofstream(scratch.path / "images" / "model.sif") << "sif";
    auto not_bundle = scratch.make("images/plain");
    trellis::config::ContainerConfig config;
    config.allowed_images = {scratch.path.string() + "/images/*"};
    auto checked = check_image(bundle.string(), config);
    CHECK(checked.kind == ImageKind::oci_bundle);
    CHECK(check_image((scratch.path / "images/model.sif").string(), config).kind == ImageKind::sif);
    CHECK_THROWS_WITH(check_image(not_bundle.string(), config), Catch::Contains("without rootfs/"));
    CHECK_THROWS_WITH(check_image((scratch.path / "images/none").string(), config), Catch::Contains("does not exist"));
    CHECK_THROWS_WITH(check_image("images/train", config), Catch::Contains("not an absolute path"));
    CHECK_THROWS_WITH(check_image("/images/a,b", config), Catch::Contains("holds ',' or ':'"));
    CHECK_THROWS_WITH(check_image("/images/a\nerror: forged", config), Catch::Contains("control character"));
    config.allowed_images = {"/shared/images/*"};
    config.origin = "/etc/trellis/trellis.toml";
    CHECK_THROWS_WITH(check_image(bundle.string(), config),
                      Catch::Contains("is not allowed on this cluster (allowed_images in /etc/trellis/trellis.toml: "
                                      "/shared/images/*)"));
    config.allowed_images.clear();
    CHECK_THROWS_WITH(check_image(bundle.string(), config), Catch::Contains("trellis.toml: none"));
    // A link into an allowed folder does not make a forbidden image allowed, nor the reverse.
    fs::create_symlink(not_bundle, scratch.path / "link");
    config.allowed_images = {scratch.path.string() + "/link"};
    CHECK_THROWS(check_image((scratch.path / "link").string(), config));
}

TEST_CASE("mounts: only under allowed prefixes, by whole path components, after resolving links") {
    Scratch scratch;
    auto data = scratch.make("data");
    auto database = scratch.make("database");
    trellis::config::ContainerConfig config;
    config.allowed_mounts = {data.string() + "/"};
    auto mounts = check_mounts(parse_mounts(data.string() + ":/d:ro"), config);
    CHECK(mounts[0].source == data.string());
    CHECK_THROWS_WITH(check_mounts(parse_mounts(database.string() + ":/d"), config),
                      Catch::Contains("is not under an allowed prefix"));
    fs::create_symlink(database, data / "escape");
    CHECK_THROWS(check_mounts(parse_mounts((data / "escape").string() + ":/d"), config));
    CHECK_THROWS_WITH(check_mounts(parse_mounts("/no/such/folder:/d"), config), Catch::Contains("does not exist"));
}

TEST_CASE("image contents: root's and unchangeable by users, no device files, setuid only on nosuid") {
    if (::getuid() != 0) return;  // root-owned entries and device files take root to make
    Scratch scratch;
    auto rootfs = scratch.make("bundle/rootfs");
    fs::create_directories(rootfs / "usr/bin");
    fs::create_directories(rootfs / "tmp");
    std::ofstream(rootfs / "usr/bin/tool") << "x";
    fs::create_symlink("usr/bin", rootfs / "bin");  // links are 0777 and harmless
    CHECK_NOTHROW(check_image_contents(rootfs.string()));
    SECTION("a world-writable folder (an image's /tmp as distributions ship it)") {
        ::chmod((rootfs / "tmp").c_str(), 01777);
        CHECK_THROWS_WITH(check_image_contents(rootfs.string()),
                          Catch::Contains((rootfs / "tmp").string() + " is writable by everyone"));
    }
    SECTION("a group-writable file") {
        ::chmod((rootfs / "usr/bin/tool").c_str(), 0664);
        CHECK_THROWS_WITH(check_image_contents(rootfs.string()), Catch::Contains("writable by its group"));
    }
    SECTION("an entry of another user's") {
        CHECK(::lchown((rootfs / "usr/bin/tool").c_str(), 1000, 1000) == 0);
        CHECK_THROWS_WITH(check_image_contents(rootfs.string()), Catch::Contains("belongs to uid 1000"));
    }
    SECTION("a device file") {
        CHECK(::mknod((rootfs / "tmp/zero").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0);
        CHECK_THROWS_WITH(check_image_contents(rootfs.string()), Catch::Contains("is a device file"));
    }
    SECTION("a setuid file, where the filesystem is not nosuid (the scratch folder's is not)") {
        ::chmod((rootfs / "usr/bin/tool").c_str(), 04755);
        CHECK_THROWS_WITH(check_image_contents(rootfs.string()), Catch::Contains("setuid or setgid"));
    }
}

TEST_CASE("Apptainer's command line: exec, contained, trellis-pause, devices, mounts, image") {
    ContainerSpec spec;
    spec.image = {"/images/model.sif", ImageKind::sif, {}, "", nullptr};
    spec.mounts = parse_mounts("/data:/data:ro");
    spec.system_mounts = {{"/var/spool/slurmd/pmix.7.0", "/var/spool/slurmd/pmix.7.0", false}};
    spec.device_nodes = container_device_nodes({"/dev/infiniband/uverbs0"}, nullptr);
    spec.apptainer = "/usr/bin/apptainer";
    spec.pause_program = "/usr/libexec/trellis/trellis-pause";
    CHECK(apptainer_command(spec) ==
          std::vector<std::string>{"/usr/bin/apptainer", "exec", "--userns", "--contain", "--no-home", "--cleanenv",
                                   "--bind", "/usr/libexec/trellis/trellis-pause:/tmp/.trellis-pause:ro", "--bind",
                                   "/dev/infiniband/uverbs0:/dev/infiniband/uverbs0", "--bind", "/data:/data:ro",
                                   "--bind", "/var/spool/slurmd/pmix.7.0:/var/spool/slurmd/pmix.7.0",
                                   "/images/model.sif", "/tmp/.trellis-pause"});
}

TEST_CASE("a container's device nodes are one list: the plan's files, then CDI's nodes, which win for a path") {
    cdi::ResolvedEdits edits;
    cdi::BindMount gpu;
    gpu.host_path = "/var/run/cdi-nodes/nvidia0";
    gpu.container_path = "/dev/nvidia0";
    gpu.device = true;
    edits.device_nodes = {gpu};
    auto nodes = container_device_nodes({"/dev/nvidia0", "/dev/nvidiactl", "/dev/infiniband/uverbs0"}, &edits);
    REQUIRE(nodes.size() == 3);
    CHECK(nodes[0].container_path == "/dev/nvidiactl");
    CHECK(nodes[1].container_path == "/dev/infiniband/uverbs0");
    CHECK(nodes[2].host_path == "/var/run/cdi-nodes/nvidia0");  // the spec's, bound once
    for (const auto& node : nodes) CHECK((node.device && node.nosuid && !node.nodev));
    CHECK(edits.device_nodes.empty());  // applied with the others, not again by the CDI applier
    CHECK(container_device_nodes({"/dev/nvidia0"}, nullptr).front().host_path == "/dev/nvidia0");
}

TEST_CASE("device files: the GPUs' and HCAs' nodes that exist") {
    Scratch scratch;
    auto dev = scratch.make("dev");
    auto sys = scratch.make("sys");
    for (const char* file : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"}) std::ofstream(dev / file) << "";
    fs::create_directories(dev / "infiniband");
    std::ofstream(dev / "infiniband" / "uverbs1") << "";
    std::ofstream(dev / "infiniband" / "rdma_cm") << "";
    fs::create_directories(sys / "mlx5_1" / "device" / "infiniband_verbs" / "uverbs1");
    auto files = device_files({1}, {"mlx5_1"}, dev.string(), sys.string());
    std::sort(files.begin(), files.end());
    CHECK(files == std::vector<std::string>{(dev / "infiniband/rdma_cm").string(),
                                            (dev / "infiniband/uverbs1").string(), (dev / "nvidia-uvm").string(),
                                            (dev / "nvidia1").string(), (dev / "nvidiactl").string()});
    CHECK(device_files({}, {}, dev.string(), sys.string()).empty());
}

TEST_CASE("launch options: the command after --, numbers checked, unknown options refused") {
    auto options =
        parse_launch_options({"--nproc-per-node", "4", "--bind", "none", "--", "trellis-train", "--steps", "5"});
    CHECK(options.nproc_per_node == 4);
    CHECK(options.bind == trellis::topology::Policy::none);
    CHECK(options.command == std::vector<std::string>{"trellis-train", "--steps", "5"});
    CHECK_THROWS_WITH(parse_launch_options({"--", "x"}), Catch::Contains("--nproc-per-node is required"));
    CHECK_THROWS_WITH(parse_launch_options({"--nproc-per-node", "0", "--", "x"}), Catch::Contains("from 1 to 4096"));
    CHECK_THROWS_WITH(parse_launch_options({"--nproc-per-node", "2"}), Catch::Contains("no command"));
    CHECK_THROWS_WITH(parse_launch_options({"--nproc-per-node", "2", "--bind", "far", "--", "x"}),
                      Catch::Contains("accepted: closest, none"));
    CHECK_THROWS_WITH(parse_launch_options({"--nprocs", "2", "--", "x"}), Catch::Contains("unknown option '--nprocs'"));
    CHECK_THROWS_WITH(parse_launch_options({"--nproc-per-nod", "2", "--", "x"}),
                      Catch::Contains("unknown option '--nproc-per-nod': did you mean --nproc-per-node?"));
    auto place = find_node_place(parse_launch_options(
        {"--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "1", "--master", "10.0.0.1:29500", "--", "x"}));
    CHECK(place.node_rank == 1);
    CHECK(place.master == "10.0.0.1:29500");
    CHECK_THROWS_WITH(find_node_place(parse_launch_options({"--nproc-per-node", "2", "--nnodes", "2", "--node-rank",
                                                            "2", "--master", "h:1", "--", "x"})),
                      Catch::Contains("outside 2 nodes"));
}

TEST_CASE("node check: GPUs without driver files and ports that are not ACTIVE are problems") {
    Scratch scratch;
    auto dev = scratch.make("dev");
    auto sys = scratch.make("sys");
    auto node = trellis::topology::load_node(trellis::test::topology_fixture("down-port-2gpu.xml"));
    auto report = check_node(node, {}, dev.string(), sys.string());
    CHECK(report.facts["gpus"].size() == 2);
    bool driver = false, down = false;
    for (const auto& problem : report.problems) {
        driver = driver || problem.find("NVIDIA driver") != std::string::npos;
        down = down || problem.find("not ACTIVE") != std::string::npos;
    }
    CHECK(driver);
    CHECK(down);
    CHECK_FALSE(report.facts["healthy"].get<bool>());
    CHECK_THAT(format_report(report), Catch::Contains("PROBLEM: "));

    auto cpu_only = trellis::topology::load_node(trellis::test::topology_fixture("cpu-only-4numa.xml"));
    CHECK(check_node(cpu_only, {}, dev.string(), sys.string()).problems.empty());
    CheckExpectations expected;
    expected.gpus = 1;
    CHECK(check_node(cpu_only, expected, dev.string(), sys.string()).problems.size() == 1);
}

namespace {

// Slurm's files for the 8-GPU fixture's node (gres.conf: /dev/nvidia[0-7]; devices constrained
// under task/cgroup), and a step request on that node under them. Returns the folder.
fs::path slurm_node_with_8_gpus(const Scratch& scratch, const std::string& task_plugin, StepRequest& request) {
    fs::path conf = scratch.make("etc");
    std::ofstream(conf / "slurm.conf") << "TaskPlugin=" << task_plugin << "\n";
    std::ofstream(conf / "cgroup.conf") << "ConstrainDevices=yes\n";
    std::ofstream(conf / "gres.conf") << "NodeName=two-level-switch-8gpu Name=gpu File=/dev/nvidia[0-7]\n";
    request.node_name = "two-level-switch-8gpu";
    request.under_slurm = true;
    request.slurm_conf = (conf / "slurm.conf").string();
    return conf;
}

}  // namespace

TEST_CASE("the step binding core that the plugin and trellis-agent launch share") {
    Config config;
    config.binding.topology_xml = trellis::test::source_dir() + "/tests/fixtures/topology/%n.xml";
    StepRequest request;
    request.tasks = 2;

    SECTION("%n in topology_xml: a node with a file of its own uses it, the others are discovered") {
        request.node_name = "no-hca-2gpu";
        auto plan = plan_step(config, request);
        CHECK(plan.host == "no-hca-2gpu");
        CHECK(plan.tasks[1].gpus.size() == 1);
        request.node_name = "not-a-fixture";
        CHECK(plan_step(config, request).host == "not-a-fixture");
    }
    SECTION("under Slurm with gres: only the step's GPUs, numbered as Slurm numbers them") {
        Scratch scratch;
        fs::path conf = slurm_node_with_8_gpus(scratch, "task/cgroup", request);
        request.step_gpus = "2,3";
        auto plan = plan_step(config, request);  // no driver table: minors in PCI order, with a warning
        CHECK(plan.tasks[0].env.at("TRELLIS_GPU") == "2");
        CHECK(plan.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "1");
        CHECK(plan.gpu_numbering == trellis::topology::GpuNumbering::step);
        request.step_gpus = "";
        CHECK(plan_step(config, request).tasks[0].gpus.empty());  // asked for none, gets none
        request.slurm_gpus_per_task = 1;
        request.step_gpus = "4,1";
        auto bound = plan_step(config, request);
        CHECK(bound.tasks[0].env.at("TRELLIS_GPU") == "1");  // Slurm's per-task order: gres index 1 first
        CHECK(bound.tasks[1].env.at("TRELLIS_GPU") == "4");
        CHECK(bound.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "0");  // it sees only its own
        // --gres-flags=allow-task-sharing: each task is still bound to its own GPU, but its
        // cgroup holds the step's GPUs, which CUDA numbers within the step (GPU 4 is the
        // second of 1 and 4).
        request.slurm_task_sharing = true;
        auto sharing = plan_step(config, request);
        CHECK(sharing.gpu_numbering == trellis::topology::GpuNumbering::step);
        CHECK(sharing.tasks[0].env.at("TRELLIS_GPU") == "1");
        CHECK(sharing.tasks[0].env.at("CUDA_VISIBLE_DEVICES") == "0");
        CHECK(sharing.tasks[1].env.at("TRELLIS_GPU") == "4");
        CHECK(sharing.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "1");
        request.share_gpus = true;  // --trellis-gpus=step: every task sees both, its own first
        auto shared = plan_step(config, request);
        CHECK(shared.tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "1,0");
        CHECK(std::none_of(shared.warnings.begin(), shared.warnings.end(),
                           [](const std::string& w) { return w.find("cannot be shared") != std::string::npos; }));
        request.share_gpus.reset();
        request.slurm_task_sharing = false;
        request.slurm_gpus_per_task = 0;
        // A map or mask: each task its GPUs by position among the step's (constrained devices).
        request.slurm_gpu_map = "map_gpu:1,0";
        auto mapped = plan_step(config, request);
        CHECK(mapped.tasks[0].env.at("TRELLIS_GPU") == "4");
        CHECK(mapped.tasks[0].env.at("CUDA_VISIBLE_DEVICES") == "0");
        CHECK(mapped.tasks[1].env.at("TRELLIS_GPU") == "1");
        request.slurm_gpu_map = "mask:0x3";
        CHECK(plan_step(config, request).tasks[1].env.at("TRELLIS_GPU") == "1,4");
        request.slurm_gpu_map = "";

        // GPUs that cannot be tied to the topology: none planned, visibility left to Slurm.
        request.step_gpus = "0";
        request.slurm_visible_devices = "MIG-4a1f";
        auto mig = plan_step(config, request);
        CHECK(mig.gpus_left_to_slurm);
        CHECK(mig.tasks[0].gpus.empty());
        CHECK(exported_env(mig, mig.tasks[0], config.binding).count("CUDA_VISIBLE_DEVICES") == 0);
        request.slurm_visible_devices = "";
        std::ofstream(conf / "gres.conf") << "NodeName=two-level-switch-8gpu Name=gpu File=/dev/nvidia[8-9]\n";
        auto missing = plan_step(config, request);
        CHECK(missing.gpus_left_to_slurm);
        CHECK(std::any_of(missing.warnings.begin(), missing.warnings.end(),
                          [](const std::string& w) { return w.find("left as Slurm set them") != std::string::npos; }));
    }
    SECTION("in a container on a node without constrained devices: numbered within the step") {
        Scratch scratch;
        slurm_node_with_8_gpus(scratch, "task/affinity", request);
        request.step_gpus = "4,5";
        CHECK(plan_step(config, request).tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "5");
        request.in_container = true;
        CHECK(plan_step(config, request).tasks[1].env.at("CUDA_VISIBLE_DEVICES") == "1");
    }
    SECTION("a map binding without constrained devices names the node's gres indices") {
        Scratch scratch;
        slurm_node_with_8_gpus(scratch, "task/affinity", request);
        request.step_gpus = "1,4";
        request.slurm_gpu_map = "map_gpu:4,1";
        auto mapped = plan_step(config, request);
        CHECK(mapped.tasks[0].env.at("TRELLIS_GPU") == "4");
        CHECK(mapped.tasks[0].env.at("CUDA_VISIBLE_DEVICES") == "4");  // node-wide numbers
        CHECK(mapped.tasks[1].env.at("TRELLIS_GPU") == "1");
        request.slurm_gpu_map = "map_gpu:0,4";  // gres 0 is not the step's: Slurm gives the first
        auto outside = plan_step(config, request);
        CHECK(outside.tasks[0].env.at("TRELLIS_GPU") == "1");
        CHECK(std::any_of(outside.warnings.begin(), outside.warnings.end(), [](const std::string& w) {
            return w.find("names no GPU of the step") != std::string::npos;
        }));
    }
}

TEST_CASE("trellis-agent launch plans with the plugin's configuration from plugstack.conf") {
    Scratch scratch;
    std::string toml = scratch.write("trellis.toml", "[binding]\nsmt = true\n");
    std::string slurm_conf = scratch.write(
        "slurm.conf", "ClusterName=test\nPlugStackConfig=" + (scratch.path / "plugstack.conf").string() + "\n");
    // Slurm's rule: PlugStackConfig, and its include files in order; the plugin by file name.
    scratch.write("plugstack.conf", "optional /usr/lib/slurm/spank_pyxis.so\ninclude " +
                                        (scratch.path / "plugstack.conf.d" / "*.conf").string() + "\n");
    scratch.write("plugstack.conf.d/trellis.conf", "required /opt/lib/spank_trellis.so config=" + toml +
                                                       " topology_xml=/fixtures/%n.xml nvidia_proc=/proc-double/%n\n");
    auto found = agent_config("", slurm_conf);
    CHECK(found.config.binding.topology_xml == "/fixtures/%n.xml");
    CHECK(found.config.binding.nvidia_proc == "/proc-double/%n");
    CHECK(found.config.binding.smt);  // the file the line names, under its overrides
    CHECK(found.source.find("plugstack.conf") != std::string::npos);
    // --config is the user's explicit choice: that file alone.
    auto chosen = agent_config(toml, slurm_conf);
    CHECK(chosen.config.binding.topology_xml.empty());
    CHECK(chosen.config.binding.smt);
    // A bad override is refused with the plugin's message, not ignored.
    scratch.write("plugstack.conf.d/trellis.conf", "required spank_trellis.so hca_filter=x\n");
    CHECK_THROWS_WITH(agent_config("", slurm_conf), Catch::Contains("hca_filter"));
}
