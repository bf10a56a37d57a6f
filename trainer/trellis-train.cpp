// trellis-train: ResNet training on ImageNet-style data (see trellis-train(1)).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>

#include "config.h"
#include "common/error.hpp"
#include "trainer/comm/comm_error.hpp"
#include "trainer/comm/make_transport.hpp"
#include "trainer/data/data_error.hpp"
#include "trainer/train/checkpoint.hpp"
#include "trainer/train/parameter_server.hpp"
#include "trainer/train/trainer.hpp"

int main(int argc, char** argv) {
    using namespace trellis::train;
    ParsedCommand command;
    try {
        command = parse_train_options({argv + 1, argv + argc});
    } catch (const trellis::UsageError& error) {
        std::fprintf(stderr, "trellis-train: %s\n", error.what());
        return 2;
    }
    if (command.action == ParsedCommand::Action::help) {
        std::fputs(train_usage(), stdout);
        return 0;
    }
    if (command.action == ParsedCommand::Action::version) {
        std::printf("trellis-train %s\n", PACKAGE_VERSION);
        return 0;
    }
    const auto& options = command.options;
    std::string who = "trellis-train: ";
    try {
        auto timeout = std::chrono::seconds(options.comm_timeout);
        auto wireup = trellis::comm::make_wireup(options.wireup, timeout);
        const auto& identity = wireup->identity();
        if (identity.size > 1) who += "rank " + std::to_string(identity.rank) + " (" + identity.host + "): ";
        trellis::comm::TcpOptions tcp;
        tcp.streams = options.tcp_streams;
        tcp.timeout = timeout;
        auto transport = trellis::comm::make_transport(options.transport == "nccl" ? "tcp" : options.transport, *wireup, tcp);
        if (options.strategy == "ps" && transport && identity.rank >= identity.size - options.ps_servers)
            return trellis::train::serve_parameters(options, *wireup, *transport);
        return train(options, *wireup, transport.get());
    } catch (const trellis::comm::PeerFailure& error) {
        std::fprintf(stderr, "%sstopping: %s\n", who.c_str(), error.what());
        return 1;
    } catch (const trellis::comm::CommError& error) {
        std::fprintf(stderr, "%scommunication: %s\n", who.c_str(), error.what());
        return 1;
    } catch (const trellis::UsageError& error) {  // a bad option value found while setting up
        std::fprintf(stderr, "%s%s\n", who.c_str(), error.what());
        return 2;
    } catch (const trellis::data::DataError& error) {
        std::fprintf(stderr, "%sdata: %s\n", who.c_str(), error.what());
        return 1;
    } catch (const CheckpointError& error) {
        std::fprintf(stderr, "%scheckpoint: %s\n", who.c_str(), error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s%s\n", who.c_str(), error.what());
        return 1;
    }
}
