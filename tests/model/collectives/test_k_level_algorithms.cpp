// The k-level algorithms of the C3 paper (switchyard::model::collectives): every
// algorithm of every operation at p in {1, 2, 3, 7, 16, 64, 100}, each message
// a distinct pattern checked to the byte at its destination, twice per plan;
// and each algorithm's sent messages against the model's superstep description.

#include <switchyard/model/algorithms.hpp>
#include <switchyard/model/collectives/collective_plan.hpp>
#include <switchyard/runtime.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace switchyard;
using namespace switchyard::model::collectives;
using sytest::fill_pattern;
using sytest::first_mismatch;
using sytest::message_key;

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// Fills the send buffer of `me`: block r of it is the message me -> r (the root's
// blocks in one-to-all, the single message to the root in all-to-one), keyed by round.
std::vector<std::byte> send_buffer(Operation op, Rank p, Rank me, std::uint64_t L, std::uint64_t round, Rank root = 0) {
  std::vector<std::byte> out;
  auto add = [&](Rank dst) {
    out.resize(out.size() + L);
    fill_pattern(out.data() + out.size() - L, L, message_key(me, dst, round));
  };
  if (op == Operation::all_to_one) {
    add(root);
  } else if (op == Operation::all_to_all || me == root) {
    for (Rank r = 0; r < p; ++r) add(r);
  }
  return out;
}

std::uint64_t recv_size(Operation op, Rank p, Rank me, std::uint64_t L, Rank root = 0) {
  if (op == Operation::one_to_all) return L;
  if (op == Operation::all_to_one) return me == root ? p * L : 0;
  return p * L;
}

// Block r of what `me` received must be the message r -> me (one-to-all: from the root).
void verify(Operation op, Rank me, std::uint64_t L, std::uint64_t round, std::span<const std::byte> got,
            const std::string& what, Rank root = 0) {
  const Rank blocks = static_cast<Rank>(got.size() / L);
  for (Rank r = 0; r < blocks; ++r) {
    const Rank src = op == Operation::one_to_all ? root : r;
    const std::size_t bad = first_mismatch(got.subspan(r * L, L), message_key(src, me, round));
    SY_CHECK(bad == std::string::npos, what << ": rank " << me << ", block " << r << " (from " << src << "), byte "
                                            << bad << " of " << L << ", round " << round);
  }
}

using Case = std::tuple<Operation, std::string>;

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Operation op : {Operation::one_to_all, Operation::all_to_one, Operation::all_to_all}) {
    for (const std::string& a : algorithm_names(op)) cases.emplace_back(op, a);
    if (op != Operation::all_to_all) cases.emplace_back(op, "logp-lev-rec(0.3)");
  }
  return cases;
}

class KLevel : public ::testing::TestWithParam<Case> {};

TEST_P(KLevel, EveryByteAtEveryProcessCount) {
  const auto& [op, algorithm] = GetParam();
  for (Rank p : {1u, 2u, 3u, 7u, 16u, 64u, 100u}) {
    // 24 bytes travel eagerly, 600 by single copy (above the 512-byte eager limit).
    for (std::uint64_t L : {24ull, 600ull}) {
      if (sytest::kSanitized && p == 100 && L == 600) continue;
      const std::string what =
          std::string(operation_name(op)) + " " + algorithm + " p=" + std::to_string(p) + " L=" + std::to_string(L);
      runtime().run(p, [&, op = op, algorithm = algorithm](Process& self) -> Task<void> {
        Communicator comm = self.world();
        CollectivePlan plan = co_await CollectivePlan::create(comm, op, algorithm, L);
        for (std::uint64_t round = 0; round < 2; ++round) {
          const std::vector<std::byte> send = send_buffer(op, p, comm.rank(), L, round);
          std::vector<std::byte> recv(recv_size(op, p, comm.rank(), L), std::byte{0xEE});
          co_await plan.run({send, recv});
          verify(op, comm.rank(), L, round, recv, what);
        }
      });
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = std::string(operation_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, KLevel, ::testing::ValuesIn(all_cases()), case_name);

// (superstep, src, dst, bytes) of every message between two processes, the
// supersteps without one dropped (the model's local copies are no messages).
using Steps = std::vector<std::vector<std::tuple<Rank, Rank, std::uint64_t>>>;

Steps model_steps(Operation op, const std::string& algorithm, Rank p, std::uint64_t L, Rank root = 0) {
  Steps steps;
  for (const model::Superstep& step : model::supersteps(op, algorithm, p, L, root)) {
    std::vector<std::tuple<Rank, Rank, std::uint64_t>> moves;
    for (const model::Submachine& sub : step.submachines) {
      for (const model::Transfer& t : sub.transfers) {
        if (t.src != t.dst) moves.emplace_back(t.src, t.dst, t.bytes);
      }
    }
    std::sort(moves.begin(), moves.end());
    if (!moves.empty()) steps.push_back(std::move(moves));
  }
  return steps;
}

Steps logged_steps(const TransferLog& log) {
  Steps steps;
  std::int64_t last = -1;
  for (const LoggedTransfer& t : log.sorted()) {
    if (static_cast<std::int64_t>(t.superstep) != last) steps.emplace_back();
    last = t.superstep;
    steps.back().emplace_back(t.src, t.dst, t.bytes);
  }
  return steps;
}

TEST_P(KLevel, SendsTheModelsSupersteps) {
  const auto& [op, algorithm] = GetParam();
  for (Rank p : {1u, 2u, 3u, 7u, 16u, 64u, 100u}) {
    const std::uint64_t L = 40;
    TransferLog log(p);
    runtime().run(p, [&, op = op, algorithm = algorithm](Process& self) -> Task<void> {
      Communicator comm = self.world();
      CollectivePlan plan = co_await CollectivePlan::create(comm, op, algorithm, L);
      const std::vector<std::byte> send = send_buffer(op, p, comm.rank(), L, 0);
      std::vector<std::byte> recv(recv_size(op, p, comm.rank(), L));
      plan.record_into(&log);
      co_await plan.run({send, recv});
    });
    const Steps want = model_steps(op, algorithm, p, L), got = logged_steps(log);
    ASSERT_EQ(want.empty(), p == 1) << operation_name(op) << " " << algorithm << " p=" << p;
    ASSERT_EQ(got.size(), want.size()) << operation_name(op) << " " << algorithm << " p=" << p << ": supersteps";
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << operation_name(op) << " " << algorithm << " p=" << p << ", superstep " << i;
    }
  }
}

// One-to-all and all-to-one at roots other than 0: every byte, and the
// messages are the model's description for that root.
class KLevelRoot : public ::testing::TestWithParam<Case> {};

TEST_P(KLevelRoot, EveryByteAndTheModelsSupersteps) {
  const auto& [op, algorithm] = GetParam();
  for (Rank p : {2u, 7u, 16u, 100u}) {
    for (Rank root : {Rank{1}, p / 2, p - 1}) {
      for (std::uint64_t L : {24ull, 600ull}) {
        const std::string what = std::string(operation_name(op)) + " " + algorithm + " p=" + std::to_string(p) +
                                 " root=" + std::to_string(root) + " L=" + std::to_string(L);
        TransferLog log(p);
        runtime().run(p, [&, op = op, algorithm = algorithm](Process& self) -> Task<void> {
          Communicator comm = self.world();
          CollectivePlan plan = co_await CollectivePlan::create(comm, op, algorithm, L, nullptr, root);
          for (std::uint64_t round = 0; round < 2; ++round) {
            const std::vector<std::byte> send = send_buffer(op, p, comm.rank(), L, round, root);
            std::vector<std::byte> recv(recv_size(op, p, comm.rank(), L, root), std::byte{0xEE});
            plan.record_into(round == 0 ? &log : nullptr);
            co_await plan.run({send, recv});
            verify(op, comm.rank(), L, round, recv, what, root);
          }
        });
        const Steps want = model_steps(op, algorithm, p, L, root), got = logged_steps(log);
        ASSERT_EQ(got.size(), want.size()) << what << ": supersteps";
        for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << what << ", superstep " << i;
      }
    }
  }
}

std::vector<Case> rooted_cases() {
  std::vector<Case> cases;
  for (const Case& c : all_cases())
    if (std::get<0>(c) != Operation::all_to_all) cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, KLevelRoot, ::testing::ValuesIn(rooted_cases()), case_name);

TEST(KLevelErrors, BadArgumentsAreRefused) {
  runtime().run(2, [](Process& self) -> Task<void> {
    Communicator comm = self.world();
    bool unknown = false, zero = false, no_machine = false, bad_buffer = false, bad_root = false;
    try {
      co_await CollectivePlan::create(comm, Operation::all_to_all, "2-lev-rec", 8);
    } catch (const InvalidArgument& e) {
      unknown = std::string(e.what()).find("unknown algorithm '2-lev-rec'") != std::string::npos;
    }
    try {
      co_await CollectivePlan::create(comm, Operation::one_to_all, "1-lev-dir", 0);
    } catch (const InvalidArgument&) {
      zero = true;
    }
    try {
      co_await CollectivePlan::create(comm, Operation::one_to_all, "auto", 8);
    } catch (const InvalidArgument& e) {
      no_machine = std::string(e.what()).find("machine") != std::string::npos;
    }
    try {
      co_await CollectivePlan::create(comm, Operation::one_to_all, "1-lev-dir", 8, nullptr, 2);
    } catch (const InvalidArgument& e) {
      bad_root = std::string(e.what()).find("root 2 is not a rank of the 2-process communicator") != std::string::npos;
    }
    CollectivePlan plan = co_await CollectivePlan::create(comm, Operation::all_to_all, "1-lev-dir", 8);
    std::vector<std::byte> send(16), recv(15);
    try {
      co_await plan.run({send, recv});
    } catch (const InvalidArgument& e) {
      bad_buffer = std::string(e.what()).find("receive buffer holds 15 bytes, expected 16") != std::string::npos;
    }
    SY_CHECK(unknown && zero && no_machine && bad_buffer && bad_root,
             "unknown " << unknown << " zero " << zero << " no machine " << no_machine << " buffer " << bad_buffer
                        << " root " << bad_root);
  });
}

}  // namespace
