// SPDX-License-Identifier: Apache-2.0
// trellis-train: ResNet training on ImageNet-style data (see trellis-train(1)).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>

#include "common/error.hpp"
#include "config.h"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/make_transport.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/parameter_server.hpp"
#include "trainer/train/trainer.hpp"

namespace {

// Thrown on, once said, so that the transport still closes as for a failure.
struct Reported {
    int status;
};

}  // namespace

int main(int argc, char** argv) {
    using namespace trellis::train;
    ParsedCommand command;
    try {
        command = parse_train_options({argv + 1, argv + argc});
    } catch (const std::exception& error) {
        return trellis::report_error("trellis-train: ", error);
    }
    if (command.action == ParsedCommand::Action::help) {
        std::fputs(train_usage().c_str(), stdout);
        return 0;
    }
    if (command.action == ParsedCommand::Action::version) {
        std::printf("trellis-train %s\n", PACKAGE_VERSION);
        return 0;
    }
    const auto& options = command.options;
    std::string who = "trellis-train: ";
    try {
        if (options.write_index) return write_tfrecord_indexes(options);
        auto timeout = std::chrono::seconds(options.comm_timeout);
        auto wireup = trellis::comm::make_wireup(options.wireup, timeout);
        const auto& identity = wireup->identity();
        if (identity.size > 1) who += "rank " + std::to_string(identity.rank) + " (" + identity.host + "): ";
        trellis::comm::TcpOptions tcp;
        tcp.streams = options.tcp_streams;
        tcp.timeout = timeout;
        auto transport =
            trellis::comm::make_transport(host_transport(options.transport), *wireup, trellis::comm::with_binding(tcp),
                                          trellis::comm::verbs_options_from_binding);
        try {
            if (options.strategy == Strategy::ps && transport && identity.rank >= identity.size - options.ps_servers)
                return serve_parameters(options, *wireup, *transport);
            return train(options, *wireup, transport.get());
        } catch (const trellis::comm::PeerFailure&) {
            throw;  // another rank's failure: said below
        } catch (const std::exception& error) {
            // This rank's own failure is the cause: said while its connections are still open,
            // so that it comes before the "stopping" lines of the ranks that see them close.
            throw Reported{trellis::report_error(who, error)};
        }
    } catch (const Reported& reported) {
        return reported.status;
    } catch (const trellis::comm::PeerFailure& error) {
        return trellis::report_error(who, error, error.silent ? " (--comm-timeout)" : "");
    } catch (const std::exception& error) {
        return trellis::report_error(who, error);
    }
}
