// libFuzzer harness: the command line's option parsers. The first byte picks
// the parser, the rest is the value as typed. A value is either accepted, with
// a result that honours the parser's bounds, or refused with a UsageError
// whose message is one printable line.
#include <switchyard/errors.hpp>

#include <cstdlib>
#include <string>

#include "../../apps/option_parsers.hpp"

namespace cli = switchyard::cli;

namespace {

void check_message(const cli::UsageError& e) {
  const std::string shown = switchyard::printable(e.what());
  if (shown.find('\n') != std::string::npos || shown.empty()) std::abort();
}

void parse(unsigned char which, const std::string& text) {
  constexpr std::uint64_t kMax = 1ull << 30;
  switch (which % 6) {
    case 0:
      if (cli::parse_uint(text, "--n", 3, 1000) - 3 > 997) std::abort();
      break;
    case 1:
      if (cli::parse_byte_count(text, "--bytes", kMax) > kMax) std::abort();
      break;
    case 2:
      for (const auto b : cli::parse_byte_list(text, kMax)) {
        if (b == 0 || b > kMax) std::abort();
      }
      break;
    case 3:
      for (const int c : cli::parse_core_list(text)) {
        if (c < 0 || c > (1 << 20)) std::abort();
      }
      break;
    case 4:
      (void)cli::parse_static_scheduler(text, "--scheduler");
      break;
    default:
      if (cli::parse_scheduler_list(text).empty()) std::abort();
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    parse(data[0], std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } catch (const cli::UsageError& e) {
    check_message(e);
  }
  return 0;
}
