#include "plan_keys.hpp"

#include <atomic>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "switchyard/errors.hpp"
#include "switchyard/runtime.hpp"

namespace switchyard::schedulers::detail {

namespace {

// Compiled-exchange keys. run_compiled_exchange names an exchange's state on a
// communicator by its key, on each node apart, so a key must name one
// exchange on every node that runs it. A key is a count of this OS process
// in its low kCountBits, beside a node field above them:
//  - local_compiled_key(), node field 0: the keys of a plan from the whole
//    pattern and of its DescribedMemory. Each node makes such a plan by
//    itself, and its key never leaves the node (the nodes' leaders pair an
//    exchange's staged messages by the order of the runs, not by key);
//  - shared_compiled_key(), node field rank 0's node + 1: the key of a plan from
//    create(), made by its rank 0 and broadcast (agree_compiled_key). No count of
//    another node can equal it, whatever number of plans each node has made,
//    nor a local key of any node, and its own node never repeats a count.
constexpr unsigned kCountBits = 40;

std::uint64_t next_count() {
  static std::atomic<std::uint64_t> next{1};  // only its own uniqueness matters: relaxed
  const std::uint64_t count = next.fetch_add(1, std::memory_order_relaxed);
  if (count >> kCountBits) throw Error("switchyard: ExchangePlan: more than 2^40 plans made in one OS process");
  return count;
}

}  // namespace

std::uint64_t local_compiled_key() { return next_count(); }

std::uint64_t shared_compiled_key() {
  const std::uint64_t node = this_node();
  if (node >= (std::uint64_t{1} << (64 - kCountBits)) - 1) {
    throw Error("switchyard: ExchangePlan::create: node " + std::to_string(node) + " is beyond the plans' keys");
  }
  return (node + 1) << kCountBits | next_count();
}

Task<std::uint64_t> agree_compiled_key(Communicator lib) {
  const std::uint64_t mine = lib.rank() == 0 ? shared_compiled_key() : 0;
  const std::vector<std::byte> key =
      co_await lib.broadcast(0, std::as_bytes(std::span<const std::uint64_t, 1>(&mine, 1)));
  std::uint64_t agreed = 0;
  std::memcpy(&agreed, key.data(), sizeof agreed);
  co_return agreed;
}

}  // namespace switchyard::schedulers::detail
