#pragma once
// ExchangeHooks: how an executor reaches the bytes of one process's messages.
// Every executor of the project takes them (the schedule executor, AC, DRS_N,
// and through them ExchangePlan::run), so a caller whose messages are not
// plain buffers (array redistribution packs and unpacks around the transfer)
// plugs into any of them the same way.

#include <cstddef>
#include <span>

namespace switchyard::schedulers {

// Entries are indices into the process's sends and receives (its row and its
// column of the communication matrix, sorted by peer).
class ExchangeHooks {
 public:
  virtual ~ExchangeHooks() = default;
  // The bytes of send entry i; called as often as the run needs them.
  virtual std::span<const std::byte> send_buffer(std::size_t i) = 0;
  virtual std::span<std::byte> recv_buffer(std::size_t i) = 0;
  // Once per run, before the first byte of send entry i goes out.
  virtual void before_send(std::size_t) {}
  // Once per run, once every byte of receive entry i has arrived.
  virtual void after_receive(std::size_t) {}
};

}  // namespace switchyard::schedulers
