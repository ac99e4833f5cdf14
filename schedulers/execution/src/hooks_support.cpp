#include "hooks_support.hpp"

#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers::detail {

namespace {

[[noreturn, gnu::cold]] void wrong_buffer(const char* who, Rank rank, const char* side, std::size_t entry,
                                          const char* direction, Rank peer, std::size_t got, const char* verb,
                                          std::uint64_t want) {
  throw InvalidArgument("switchyard: " + std::string(who) + " on rank " + std::to_string(rank) + ": " + side +
                        " buffer for entry " + std::to_string(entry) + " (" + direction + " rank " +
                        std::to_string(peer) + ") has " + std::to_string(got) + " bytes, the plan " + verb + " " +
                        std::to_string(want));
}

}  // namespace

void check_buffer_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends,
                        std::span<const MatrixEntry> receives, ExchangeHooks& hooks) {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const std::size_t got = hooks.send_buffer(i).size();
    if (got != sends[i].bytes) wrong_buffer(who, rank, "send", i, "to", sends[i].peer, got, "sends", sends[i].bytes);
  }
  for (std::size_t i = 0; i < receives.size(); ++i) {
    const std::size_t got = hooks.recv_buffer(i).size();
    if (got != receives[i].bytes) {
      wrong_buffer(who, rank, "receive", i, "from", receives[i].peer, got, "receives", receives[i].bytes);
    }
  }
}

}  // namespace switchyard::schedulers::detail
