// SPDX-License-Identifier: Apache-2.0
#include "agent/health/node_check.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/command.hpp"
#include "common/cli.hpp"
#include "common/host.hpp"
#include "common/error.hpp"
#include "topology/discovery.hpp"

namespace trellis::agent {

namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

cli::OptionTable check_table(CheckExpectations& expected, bool& json, std::string& xml) {
    cli::OptionTable table("trellis-agent check --help");
    table.flag("--json", "one JSON object instead of the table", [&] { json = true; })
        .value("--expect-gpus", "N", "a problem when fewer GPUs are found",
               [&](auto& v) { expected.gpus = cli::parse_int(v, "--expect-gpus", 0); })
        .value("--expect-hcas", "N", "a problem when fewer active HCA ports are found",
               [&](auto& v) { expected.hcas = cli::parse_int(v, "--expect-hcas", 0); })
        .flag("--expect-container", "a problem when containers cannot be made here", [&] { expected.container = true; })
        .value("--xml", "FILE", "an hwloc XML topology instead of this machine's", [&](auto& v) { xml = v; });
    return table;
}

}  // namespace

NodeReport check_node(const topology::Node& node, const CheckExpectations& expected, const std::string& dev,
                      const std::string& sys) {
    NodeReport report;
    auto& facts = report.facts;
    facts["host"] = node.host;
    facts["cpus"] = node.cpus.size();
    facts["numa_nodes"] = node.numa_nodes.size();
    facts["packages"] = node.packages.size();

    facts["gpus"] = nlohmann::json::array();
    bool nvidia_driver = fs::exists(dev + "/nvidiactl");
    for (const auto& gpu : node.gpus) {
        std::string device = dev + "/nvidia" + std::to_string(gpu.vendor_index);
        bool present = gpu.vendor != topology::GpuVendor::nvidia || fs::exists(device);
        facts["gpus"].push_back({{"index", gpu.index},
                                 {"vendor", topology::vendor_name(gpu.vendor)},
                                 {"pci", gpu.place.address.to_string()},
                                 {"device", present ? device : ""}});
        if (!present)
            report.problems.push_back("GPU " + std::to_string(gpu.index) + " (" + gpu.place.address.to_string() +
                                      ") has no " + device + ": is the NVIDIA driver loaded?");
    }
    if (!node.gpus.empty() && !nvidia_driver && node.gpus.front().vendor == topology::GpuVendor::nvidia)
        report.problems.push_back(dev + "/nvidiactl is missing: the NVIDIA driver is not loaded");

    facts["hcas"] = nlohmann::json::array();
    int active_ports = 0;
    for (const auto& hca : node.hcas)
        for (const auto& port : hca.ports) {
            facts["hcas"].push_back({{"name", hca.name},
                                     {"port", port.number},
                                     {"state", topology::port_state_name(port.state)},
                                     {"rate", port.rate},
                                     {"link_layer", port.link_layer},
                                     {"netdev", port.netdev}});
            if (port.active())
                ++active_ports;
            else
                report.problems.push_back(hca.name + " port " + std::to_string(port.number) + " is " +
                                          topology::port_state_name(port.state) + ", not ACTIVE");
        }

    // GPUDirect RDMA: the peer-memory module of either generation.
    std::string gdr;
    for (const char* module : {"nvidia_peermem", "nv_peer_mem"})
        if (fs::exists(sys + "/module/" + module)) gdr = module;
    facts["gpudirect_rdma"] = gdr.empty() ? nlohmann::json(nullptr) : nlohmann::json(gdr);
    if (gdr.empty() && !node.gpus.empty() && active_ports > 0)
        report.problems.push_back("GPUs and active HCAs but no GPUDirect RDMA module (modprobe nvidia_peermem)");

    // IPoIB interfaces: type 32 (ARPHRD_INFINIBAND) in /sys/class/net.
    facts["ipoib"] = nlohmann::json::array();
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(sys + "/class/net", error))
        if (first_line(entry.path() / "type") == "32")
            facts["ipoib"].push_back(
                {{"name", entry.path().filename().string()}, {"state", first_line(entry.path() / "operstate")}});

    // OCI bundles run in a user namespace of the job's user's, .sif images through Apptainer
    // in its user-namespace mode: both need unprivileged user namespaces.
    // Linux 5.12 or later (openat2, mount_setattr), and no AppArmor rule against them
    // (Ubuntu 23.10 and later restrict them unless a profile allows it).
    long user_namespaces = std::atol(first_line("/proc/sys/user/max_user_namespaces").c_str());
    std::string clone = first_line("/proc/sys/kernel/unprivileged_userns_clone");
    std::string apparmor = first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    utsname kernel{};
    int major = 0, minor = 0;
    if (::uname(&kernel) == 0) std::sscanf(kernel.release, "%d.%d", &major, &minor);
    bool recent = major > 5 || (major == 5 && minor >= 12);
    bool can_contain = user_namespaces > 0 && clone != "0" && apparmor != "1" && recent;
    facts["user_namespaces"] = can_contain;
    facts["runtimes"] = nlohmann::json::object();
    for (const char* runtime : {"apptainer", "singularity"}) {
        auto path = find_program(runtime);
        facts["runtimes"][runtime] = path.empty() ? nlohmann::json(nullptr) : nlohmann::json(path);
    }

    if (expected.gpus && int(node.gpus.size()) < *expected.gpus)
        report.problems.push_back("expected at least " + std::to_string(*expected.gpus) + " GPUs, found " +
                                  std::to_string(node.gpus.size()));
    if (expected.hcas && active_ports < *expected.hcas)
        report.problems.push_back("expected at least " + std::to_string(*expected.hcas) + " active HCA ports, found " +
                                  std::to_string(active_ports));
    if (expected.container && !recent)
        report.problems.push_back(std::string("kernel ") + kernel.release +
                                  ": containers need Linux 5.12 or later (openat2, mount_setattr)");
    else if (expected.container && !can_contain)
        report.problems.push_back(
            "unprivileged user namespaces are off or restricted (sysctl user.max_user_namespaces, "
            "kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns): "
            "no container can be made");
    facts["problems"] = report.problems;
    facts["healthy"] = report.problems.empty();
    return report;
}

std::string format_report(const NodeReport& report) {
    const auto& f = report.facts;
    std::ostringstream out;
    auto count = [](const nlohmann::json& n, const char* one, const char* many) {
        return std::to_string(n.get<long>()) + " " + (n.get<long>() == 1 ? one : many);
    };
    out << "node        " << f["host"].get<std::string>() << ": " << count(f["cpus"], "CPU", "CPUs") << ", "
        << count(f["packages"], "socket", "sockets") << ", " << count(f["numa_nodes"], "NUMA node", "NUMA nodes")
        << "\n";
    out << "GPUs        " << (f["gpus"].empty() ? "none" : std::to_string(f["gpus"].size())) << "\n";
    for (const auto& gpu : f["gpus"])
        out << "  " << gpu["index"] << "  " << gpu["vendor"].get<std::string>() << "  " << gpu["pci"].get<std::string>()
            << "  "
            << (gpu["device"].get<std::string>().empty() ? "(no device file)" : gpu["device"].get<std::string>())
            << "\n";
    out << "HCA ports   " << (f["hcas"].empty() ? "none" : std::to_string(f["hcas"].size())) << "\n";
    for (const auto& hca : f["hcas"])
        out << "  " << hca["name"].get<std::string>() << ":" << hca["port"] << "  " << hca["state"].get<std::string>()
            << "  " << hca["link_layer"].get<std::string>() << "  " << hca["rate"].get<std::string>() << "  "
            << hca["netdev"].get<std::string>() << "\n";
    out << "GPUDirect   "
        << (f["gpudirect_rdma"].is_null() ? "no peer-memory module" : f["gpudirect_rdma"].get<std::string>()) << "\n";
    std::string ipoib, runtimes;
    for (const auto& netdev : f["ipoib"])
        ipoib += (ipoib.empty() ? "" : " ") + netdev["name"].get<std::string>() + " (" +
                 netdev["state"].get<std::string>() + ")";
    for (const auto& [name, path] : f["runtimes"].items())
        if (!path.is_null()) runtimes += (runtimes.empty() ? "" : " ") + name;
    out << "IPoIB       " << (ipoib.empty() ? "none" : ipoib) << "\n";
    out << "containers  "
        << (f["user_namespaces"].get<bool>() ? "OCI bundles (user namespaces)" : "none: user namespaces are off")
        << ", .sif: " << (runtimes.empty() ? "no apptainer or singularity in PATH" : runtimes) << "\n";
    if (report.problems.empty()) out << "healthy\n";
    for (const auto& problem : report.problems) out << "PROBLEM: " << problem << "\n";
    return out.str();
}

int check_command(const std::vector<std::string>& args) {
    CheckExpectations expected;
    bool json = false;
    std::string xml;
    check_table(expected, json, xml).parse(args);
    auto node = topology::load_node(xml);
    if (node.host.empty()) node.host = host_name();
    auto report = check_node(node, expected);
    if (json)
        std::printf("%s\n", report.facts.dump().c_str());
    else
        std::fputs(format_report(report).c_str(), stdout);
    return report.problems.empty() ? 0 : 1;
}

std::string check_help() {
    CheckExpectations expected;
    bool json;
    std::string xml;
    return "usage: trellis-agent check [OPTIONS]\n\n"
           "GPUs, HCA ports, GPUDirect RDMA, IPoIB and containers on this node; exit status 1 on a\n"
           "problem.\n\n" +
           check_table(expected, json, xml).help();
}

}  // namespace trellis::agent
