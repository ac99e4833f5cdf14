#pragma once
// Hooks that describe their memory (exchange_hooks.hpp), compiled into the
// direct copies of a plan made from the whole pattern: each piece of a
// message that is contiguous in its sender's memory and in its receiver's
// becomes one CopyStep from the sender's send region into the receiver's
// receive region (each member publishes those two, whole, per run), so a
// compiled run copies every byte once and packs nothing.
//
// Compiled once per member, on its first run: it records its own
// description, waits until every peer it exchanges with has recorded theirs
// (in this run or an earlier one: the plan keeps them), then pairs its
// messages' blocks with the peers' along its steps between entries
// (copy_steps.hpp), merging pieces that are adjacent on both sides. Later runs
// find the steps compiled and only check the regions.

#include <cstdint>
#include <memory>
#include <span>

#include "copy_steps.hpp"
#include "switchyard/compiled_exchange.hpp"
#include "switchyard/process.hpp"
#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/task.hpp"

namespace switchyard::schedulers::detail {

class DescribedMemory {
 public:
  // compiled_key: the exchange key of the direct runs (run_compiled_exchange), other
  // than the plan's runs through buffers, whose steps differ. Its node's own
  // (plan_keys.cpp, local_compiled_key): direct runs stay on one node.
  DescribedMemory(Rank processes, std::uint64_t compiled_key);
  ~DescribedMemory();
  DescribedMemory(const DescribedMemory&) = delete;
  DescribedMemory& operator=(const DescribedMemory&) = delete;

  std::uint64_t compiled_key() const noexcept { return compiled_key_; }
  // Member me's direct steps, or nullptr before they are compiled.
  const CompiledMember* compiled(Rank me) const noexcept;
  // Compiles them (see above): `sends` and `receives` are me's entries,
  // `entry_steps` its steps between them. Throws InvalidArgument for a
  // description that does not match the entries' sizes or whose receive
  // blocks overlap, Error when a peer's description does not come.
  Task<const CompiledMember*> compile(Process& p, Rank me, std::span<const MatrixEntry> sends,
                                      std::span<const MatrixEntry> receives, const MemberSteps& entry_steps,
                                      ExchangeHooks& hooks);
  // Member me's regions for this run (hooks.memory()), once compiled: throws
  // InvalidArgument if one does not reach the end of every block described in it.
  ExchangeMemory memory(Rank me, ExchangeHooks& hooks) const;

 private:
  struct Part;
  Task<void> describe(Process& p, Rank me, std::span<const MatrixEntry> sends, std::span<const MatrixEntry> receives,
                      ExchangeHooks& hooks);
  Task<void> await_description(Process& p, Rank me, Rank peer) const;
  MemberSteps pair_blocks(const MemberSteps& entry_steps) const;

  std::unique_ptr<Part[]> parts_;
  std::uint64_t compiled_key_;
};

}  // namespace switchyard::schedulers::detail
