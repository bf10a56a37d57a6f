// trellis-train: ResNet training on ImageNet-style data (see trellis-train(1)).
#include <cstdio>
#include <exception>
#include <stdexcept>

#include "config.h"
#include "trainer/data/data_error.hpp"
#include "trainer/train/checkpoint.hpp"
#include "trainer/train/trainer.hpp"

int main(int argc, char** argv) {
    using namespace trellis::train;
    ParsedCommand command;
    try {
        command = parse_train_options({argv + 1, argv + argc});
    } catch (const std::invalid_argument& error) {
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
    try {
        return train(command.options);
    } catch (const std::invalid_argument& error) {  // a bad option value found while setting up
        std::fprintf(stderr, "trellis-train: %s\n", error.what());
        return 2;
    } catch (const trellis::data::DataError& error) {
        std::fprintf(stderr, "trellis-train: data: %s\n", error.what());
        return 1;
    } catch (const CheckpointError& error) {
        std::fprintf(stderr, "trellis-train: checkpoint: %s\n", error.what());
        return 1;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "trellis-train: %s\n", error.what());
        return 1;
    }
}
