// The schedule validator: it accepts schedules whose phases are partial
// permutations carrying every byte exactly once, and rejects each kind of
// violation with a message naming it.

#include <switchyard/errors.hpp>
#include <switchyard/schedulers/schedule.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace switchyard;
using namespace switchyard::schedulers;

// 0 -> 1 (100 bytes), 1 -> 0 (50), 2 -> 1 (10), 3 -> 3 (5, a self-message).
CommMatrix small() {
  CommMatrix m(4);
  m.set(0, 1, 100);
  m.set(1, 0, 50);
  m.set(2, 1, 10);
  m.set(3, 3, 5);
  return m;
}

Schedule whole(std::vector<Phase> phases) { return Schedule{4, "test", std::move(phases)}; }

void expect_invalid(const Schedule& s, const CommMatrix& m, const std::string& fragment,
                    Contention contention = Contention::forbidden) {
  try {
    validate(s, m, contention);
    FAIL() << "expected a violation mentioning '" << fragment << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Schedule, AcceptsWholeMessages) {
  const CommMatrix m = small();
  const Schedule s = whole({{{0, 1, 0, 100}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{2, 1, 0, 10}}});
  EXPECT_NO_THROW(validate(s, m));
  EXPECT_EQ(s.transfers(), 4u);
  EXPECT_EQ(s.makespan_bytes(), 110u);
}

TEST(Schedule, AcceptsSplitMessagesInAnyOrder) {
  const CommMatrix m = small();
  const Schedule s =
      whole({{{0, 1, 60, 40}, {1, 0, 0, 50}}, {{0, 1, 0, 30}, {3, 3, 0, 5}}, {}, {{2, 1, 0, 10}}, {{0, 1, 30, 30}}});
  EXPECT_NO_THROW(validate(s, m));
  EXPECT_EQ(s.makespan_bytes(), 50u + 30u + 0u + 10u + 30u);
}

TEST(Schedule, AcceptsEmptyMatrixWithAndWithoutEmptyPhases) {
  const CommMatrix empty(3);
  EXPECT_NO_THROW(validate(Schedule{3, "none", {}}, empty));
  EXPECT_NO_THROW(validate(Schedule{3, "idle", {{}, {}}}, empty));
}

TEST(Schedule, RejectsDoubleSend) {
  const CommMatrix m = small();
  CommMatrix two = m;
  two.set(0, 2, 7);
  expect_invalid(Schedule{4, "test", {{{0, 1, 0, 100}, {0, 2, 0, 7}}, {{1, 0, 0, 50}, {2, 1, 0, 10}, {3, 3, 0, 5}}}},
                 two, "sends twice");
}

TEST(Schedule, RejectsDoubleReceive) {
  expect_invalid(whole({{{0, 1, 0, 100}, {2, 1, 0, 10}}, {{1, 0, 0, 50}, {3, 3, 0, 5}}}), small(), "receives twice");
}

// Schedules made elsewhere (array redistribution's naive one) may have
// contention; everything else is checked as before.
TEST(Schedule, AcceptsContentionOnlyWhenAllowed) {
  CommMatrix m = small();
  m.set(0, 2, 7);
  const Schedule s = whole({{{0, 1, 0, 100}, {0, 2, 0, 7}, {2, 1, 0, 10}}, {{1, 0, 0, 50}, {3, 3, 0, 5}}});
  expect_invalid(s, m, "sends twice");
  EXPECT_NO_THROW(validate(s, m, Contention::allowed));
  expect_invalid(whole({{{0, 1, 0, 100}, {0, 2, 0, 7}, {2, 1, 0, 10}}, {{1, 0, 0, 50}}}), m,
                 "message 3 -> 3 is never sent", Contention::allowed);
  expect_invalid(whole({{{0, 1, 0, 100}, {0, 2, 0, 7}, {2, 1, 0, 10}, {2, 1, 0, 10}}, {{1, 0, 0, 50}, {3, 3, 0, 5}}}),
                 m, "a second piece of the message in the phase", Contention::allowed);
  // Two pieces of one message in one phase, even when they do not overlap.
  expect_invalid(whole({{{0, 1, 0, 40}, {0, 1, 40, 60}, {0, 2, 0, 7}, {2, 1, 0, 10}}, {{1, 0, 0, 50}, {3, 3, 0, 5}}}),
                 m, "a second piece of the message in the phase", Contention::allowed);
}

TEST(Schedule, RejectsMissingBytes) {
  // 0 -> 1 sends only 90 of its 100 bytes, at the start.
  expect_invalid(whole({{{0, 1, 0, 90}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{2, 1, 0, 10}}}), small(), "only 90 of 100");
  // A gap in the middle.
  expect_invalid(whole({{{0, 1, 0, 40}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{0, 1, 50, 50}}, {{2, 1, 0, 10}}}), small(),
                 "40..50 are never sent");
}

TEST(Schedule, RejectsMessageNeverSent) {
  expect_invalid(whole({{{0, 1, 0, 100}, {1, 0, 0, 50}}, {{2, 1, 0, 10}}}), small(), "never sent");
}

TEST(Schedule, RejectsOverlappingRanges) {
  expect_invalid(whole({{{0, 1, 0, 60}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{0, 1, 50, 50}}, {{2, 1, 0, 10}}}), small(),
                 "sent twice");
  // The same whole message twice.
  expect_invalid(whole({{{0, 1, 0, 100}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{0, 1, 0, 100}}, {{2, 1, 0, 10}}}), small(),
                 "sent twice");
}

TEST(Schedule, RejectsRangePastTheMessage) {
  expect_invalid(whole({{{0, 1, 0, 101}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{2, 1, 0, 10}}}), small(), "runs past");
  expect_invalid(whole({{{0, 1, 100, 1}}}), small(), "runs past");
}

TEST(Schedule, RejectsNonEntry) {
  expect_invalid(whole({{{0, 1, 0, 100}, {1, 2, 0, 5}, {3, 3, 0, 5}}, {{1, 0, 0, 50}, {2, 1, 0, 10}}}), small(),
                 "not a matrix entry");
}

TEST(Schedule, RejectsEmptyTransferAndBadRank) {
  expect_invalid(whole({{{0, 1, 0, 0}}}), small(), "moves no bytes");
  expect_invalid(whole({{{0, 4, 0, 1}}}), small(), "outside 0..3");
}

TEST(Schedule, RejectsWrongProcessCount) {
  Schedule s = whole({{{0, 1, 0, 100}, {1, 0, 0, 50}, {3, 3, 0, 5}}, {{2, 1, 0, 10}}});
  s.processes = 5;
  expect_invalid(s, small(), "it is for 5 processes, the matrix has 4");
}

}  // namespace
