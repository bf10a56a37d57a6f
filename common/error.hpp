// SPDX-License-Identifier: Apache-2.0
// One error hierarchy for every program, with three meanings that decide the exit status:
// bad usage or input (2), refused by policy (3), everything else (1). Each domain error
// derives from one of them, so that a program's main catches the base and never re-derives
// codes. A domain error may name its topic ("data", "communication"), which the report puts
// before the message.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace trellis {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
    virtual int exit_status() const { return 1; }
    virtual const char* topic() const { return nullptr; }
};

// The command line, a configuration file or another input the caller controls is wrong.
struct UsageError : Error {
    using Error::Error;
    int exit_status() const override { return 2; }
};

// The request is well formed but a site policy or a security rule forbids it.
struct Refused : Error {
    using Error::Error;
    int exit_status() const override { return 3; }
    const char* topic() const override { return "refused"; }
};

// 2, 3 or 1 as above (1 for anything that is not a trellis::Error).
int exit_status(const std::exception& error);

// Prints "PREFIX[TOPIC: ]MESSAGE[HINT]" on stderr and returns the exit status for it.
int report_error(const std::string& prefix, const std::exception& error, const std::string& hint = "");

}  // namespace trellis
