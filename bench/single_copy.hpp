#pragma once
// Single-copy bandwidth between two processes beside std::memcpy of the same
// buffers: bench_bandwidth (two cores) and bench_nodes (two nodes).
//
// Correctness: in every batch the first message (untimed, into a poisoned
// buffer) and the last one (the buffer is poisoned again before the timed
// messages) are compared byte for byte with the sender's pattern.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace sybench {

inline constexpr std::byte kPoison{0xA5};

// Messages per chunk: about 1.6 MiB of payload (32 MiB per batch), at least one message.
inline int per_chunk_for(std::size_t bytes) {
  return static_cast<int>(std::max<std::size_t>(1, (std::size_t{32} << 20) / kChunks / bytes));
}

// The sender's buffer and the receiver's, each page-aligned, the receiver's
// `skew` bytes past its page boundary. With skew 0, (dst - src) mod 4096 == 0.
// Skew matters on this CPU (AMD Zen 3, glibc 2.36): glibc's memcpy uses
// `rep movsb` (FSRM) from 2 KiB up, and `rep movsb` runs about 20 times slower
// when (dst - src) mod 4096 is between 1 and 31. The BM_*_Skew16 lines show it.
struct CopyBuffers {
  CopyBuffers(std::size_t n, std::size_t skew)
      : size(n), src_block(alloc(n)), dst_block(alloc(n + skew)), src(src_block.get()), dst(dst_block.get() + skew) {
    for (std::size_t i = 0; i < n; ++i) src[i] = pattern(i);
    std::memset(dst, 0, n);
  }
  static std::byte pattern(std::size_t i) { return static_cast<std::byte>((i * 131 + (i >> 12) * 7 + 1) & 0xff); }
  void check(const char* which) const {
    for (std::size_t i = 0; i < size; ++i) {
      if (dst[i] != pattern(i)) {
        throw std::runtime_error(std::string("single-copy payload check failed (") + which + " message of " +
                                 std::to_string(size) + " bytes): byte " + std::to_string(i) + " differs");
      }
    }
  }

  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  static std::unique_ptr<std::byte, Free> alloc(std::size_t n) {
    constexpr std::size_t kPage = 4096;
    void* p = std::aligned_alloc(kPage, (n + kPage - 1) / kPage * kPage);
    if (!p) throw std::bad_alloc();
    return std::unique_ptr<std::byte, Free>(static_cast<std::byte*>(p));
  }

  std::size_t size;
  std::unique_ptr<std::byte, Free> src_block, dst_block;
  std::byte* src;
  std::byte* dst;
};

// Seconds per memcpy of buf.src into buf.dst on a thread pinned to `cpu`, after one untimed copy.
inline double memcpy_time(CopyBuffers& buf, int per_chunk, int cpu) {
  ChunkTimer timer(per_chunk);
  run_pinned(cpu, [&] {
    std::memcpy(buf.dst, buf.src, buf.size);
    benchmark::ClobberMemory();
    timer.start();
    for (int c = 0; c < kChunks; ++c) {
      for (int i = 0; i < per_chunk; ++i) {
        std::memcpy(buf.dst, buf.src, buf.size);
        benchmark::ClobberMemory();
      }
      timer.lap();
    }
  });
  return timer.per_op();
}

// Seconds per message of buf.size bytes from rank 0 to rank 1, placed by
// `options`, on the node that hosts rank 1 (0 on the others: nothing timed).
// Rank 1 times chunks of `per_chunk` received messages; the sender runs ahead
// across chunk boundaries as it would anyway.
inline double single_copy_time(switchyard::Runtime& rt, CopyBuffers& buf, int per_chunk, int in_flight,
                               const switchyard::RunOptions& options) {
  ChunkTimer timer(per_chunk);
  const int messages = kChunks * per_chunk;
  rt.run(
      2,
      [&](switchyard::Process& p) -> switchyard::Task<void> {
        const std::span<const std::byte> out(buf.src, buf.size);
        const std::span<std::byte> in(buf.dst, buf.size);
        auto check_size = [&](std::uint64_t n) {
          if (n != buf.size) {
            throw std::runtime_error("recv_into: " + std::to_string(n) + " bytes, sent " + std::to_string(buf.size));
          }
        };
        if (p.rank() == 0) {
          co_await p.send(1, out);  // the untimed first message
          co_await p.barrier();
          if (in_flight <= 1) {
            for (int i = 0; i < messages; ++i) co_await p.send(1, out);
          } else {
            std::vector<switchyard::SendTicket> window(static_cast<std::size_t>(in_flight));
            for (int i = 0; i < messages; ++i) {
              switchyard::SendTicket& slot = window[static_cast<std::size_t>(i % in_flight)];
              if (slot.valid()) co_await p.wait(slot);
              slot = p.post_send(1, out);
            }
            for (auto& t : window) {
              if (t.valid()) co_await p.wait(t);
            }
          }
        } else {
          std::memset(in.data(), static_cast<int>(kPoison), in.size());
          check_size(co_await p.recv_into(0, in));
          buf.check("first");
          std::memset(in.data(), static_cast<int>(kPoison), in.size());  // leaves it warm, as memcpy's destination
          co_await p.barrier();
          timer.start();
          for (int i = 0; i < messages; ++i) {
            check_size(co_await p.recv_into(0, in));
            if ((i + 1) % per_chunk == 0) timer.lap();
          }
          buf.check("last");
        }
      },
      options);
  return timer.per_op();
}

}  // namespace sybench
