#pragma once
// Private helpers of the executors around ExchangeHooks.

#include <cstddef>
#include <span>

#include "switchyard/schedulers/comm_matrix.hpp"
#include "switchyard/schedulers/exchange_hooks.hpp"
#include "switchyard/schedulers/payload.hpp"

namespace switchyard::schedulers::detail {

// ExchangeBuffers as hooks: the executors' buffer forms run through their hook forms.
class BufferHooks final : public ExchangeHooks {
 public:
  explicit BufferHooks(ExchangeBuffers& buffers) noexcept : buffers_(buffers) {}
  std::span<const std::byte> send_buffer(std::size_t i) override { return buffers_.send_buffer(i); }
  std::span<std::byte> recv_buffer(std::size_t i) override { return buffers_.recv_buffer(i); }

 private:
  ExchangeBuffers& buffers_;
};

// Throws InvalidArgument naming `who`, the rank and the entry if a hook's
// buffer is not exactly its message's size. Called before anything is
// posted: a member that refuses its buffers after sending half its messages
// would leave the others waiting for the rest.
// With send_out and recv_out (of the entries' counts), the buffers are kept
// there too, for a compiled run to publish.
void check_buffer_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends,
                        std::span<const MatrixEntry> receives, ExchangeHooks& hooks,
                        std::span<std::span<const std::byte>> send_out = {},
                        std::span<std::span<std::byte>> recv_out = {});
// The same for buffers given as spans, whose counts match the entries'.
void check_buffer_sizes(const char* who, Rank rank, std::span<const MatrixEntry> sends,
                        std::span<const MatrixEntry> receives, std::span<const std::span<const std::byte>> send,
                        std::span<const std::span<std::byte>> recv);

}  // namespace switchyard::schedulers::detail
