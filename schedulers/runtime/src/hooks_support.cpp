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

namespace {

template <class Send, class Recv>
void check_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                 Send&& send, Recv&& recv) {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const std::size_t got = send(i).size();
    if (got != sends[i].bytes) wrong_buffer(who, rank, "send", i, "to", sends[i].peer, got, "sends", sends[i].bytes);
  }
  for (std::size_t i = 0; i < receives.size(); ++i) {
    const std::size_t got = recv(i).size();
    if (got != receives[i].bytes) {
      wrong_buffer(who, rank, "receive", i, "from", receives[i].peer, got, "receives", receives[i].bytes);
    }
  }
}

}  // namespace

void check_buffer_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends,
                        std::span<const MatrixEntry> receives, ExchangeHooks& hooks,
                        std::span<std::span<const std::byte>> send_out, std::span<std::span<std::byte>> recv_out) {
  check_sizes(
      who, rank, sends, receives,
      [&](std::size_t i) {
        const std::span<const std::byte> b = hooks.send_buffer(i);
        if (!send_out.empty()) send_out[i] = b;
        return b;
      },
      [&](std::size_t i) {
        const std::span<std::byte> b = hooks.recv_buffer(i);
        if (!recv_out.empty()) recv_out[i] = b;
        return b;
      });
}

// On every run of the span form: one pass comparing sizes, the message built
// only for a mismatch.
void check_buffer_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends,
                        std::span<const MatrixEntry> receives, std::span<const std::span<const std::byte>> send,
                        std::span<const std::span<std::byte>> recv) {
  // The OR of each size xor the plan's: zero only when every size matches,
  // with neither a branch nor a flag per buffer (the loops vectorize).
  std::uint64_t differ = 0;
  for (std::size_t i = 0; i < sends.size(); ++i) differ |= send[i].size() ^ sends[i].bytes;
  for (std::size_t i = 0; i < receives.size(); ++i) differ |= recv[i].size() ^ receives[i].bytes;
  if (differ != 0) [[unlikely]] {
    check_sizes(
        who, rank, sends, receives, [&](std::size_t i) { return send[i]; }, [&](std::size_t i) { return recv[i]; });
  }
}

}  // namespace switchyard::schedulers::detail
