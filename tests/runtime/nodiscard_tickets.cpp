// Not a test program: tests/runtime/expect_warnings.cmake compiles it and checks that
// the compiler warns about every ticket dropped below (a dropped ticket must
// not be silent: post_* and the tickets are [[nodiscard]]). One drop per line,
// named in expect_warnings's list in tests/runtime/CMakeLists.txt.

#include <switchyard/runtime.hpp>

switchyard::Task<void> drops(switchyard::Process& p, switchyard::Communicator c, std::span<const std::byte> bytes,
                             std::span<std::byte> into) {
  p.post_send(1, bytes);
  p.post_ssend(1, bytes);
  p.post_recv(1);
  p.post_recv_into(1, into);
  c.post_send(1, bytes);
  c.post_ssend(1, bytes);
  c.post_recv(1);
  c.post_recv_into(1, into);
  p.send(1, bytes);
  co_return;
}
