// SPDX-License-Identifier: Apache-2.0
// Learning-rate schedules: warmup, step, cosine, polynomial.
#include "tests/catch.hpp"

#include "trainer/optim/schedule.hpp"

using trellis::optim::Schedule;
using trellis::optim::ScheduleConfig;

TEST_CASE("linear warmup then step decay at the boundaries") {
    ScheduleConfig config;
    config.base_lr = 0.4;
    config.warmup_steps = 4;
    config.total_steps = 100;
    config.boundaries = {50, 30};
    Schedule schedule(config);
    CHECK(schedule.at(0) == Approx(0.1));
    CHECK(schedule.at(3) == Approx(0.4));
    CHECK(schedule.at(29) == Approx(0.4));
    CHECK(schedule.at(30) == Approx(0.04));
    CHECK(schedule.at(50) == Approx(0.004));
}

TEST_CASE("cosine and polynomial decay from the end of warmup to the last step") {
    ScheduleConfig config;
    config.base_lr = 1.0;
    config.warmup_steps = 10;
    config.total_steps = 110;
    config.kind = trellis::optim::ScheduleKind::cosine;
    Schedule cosine(config);
    CHECK(cosine.at(10) == Approx(1.0));
    CHECK(cosine.at(60) == Approx(0.5));
    CHECK(cosine.at(110) == Approx(0.0).margin(1e-12));
    config.kind = trellis::optim::ScheduleKind::poly;
    Schedule poly(config);
    CHECK(poly.at(60) == Approx(0.25));
}

TEST_CASE("bad schedules are refused") {
    ScheduleConfig config;
    CHECK_THROWS_WITH(trellis::optim::schedule_kinds().parse("exponential", "--lr-schedule"),
                      Catch::Contains("accepted: step, cosine, poly, constant"));
    config.base_lr = 0;
    CHECK_THROWS(Schedule(config));
}

TEST_CASE("a schedule's description names what shapes the curve, and only that") {
    ScheduleConfig config;
    config.base_lr = 0.4;
    config.warmup_steps = 4;
    config.total_steps = 100;
    config.boundaries = {30, 50};
    auto text = trellis::optim::describe(config);
    CHECK(text == "step from lr 0.4, warmup 4 steps, x0.1 at 30,50");
    config.total_steps = 200;  // a longer run on the same step curve
    CHECK(trellis::optim::describe(config) == text);
    config.boundaries = {30, 60};
    CHECK(trellis::optim::describe(config) != text);
    config.kind = trellis::optim::ScheduleKind::cosine;
    auto cosine = trellis::optim::describe(config);
    CHECK(cosine == "cosine from lr 0.4, warmup 4 steps, to 0 at step 200");
    config.total_steps = 100;  // the cosine ends with the run: another curve
    CHECK(trellis::optim::describe(config) != cosine);
}
