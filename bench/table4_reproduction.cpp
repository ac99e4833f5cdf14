// Reproduces the "perm" column of Ranka-Wang-Fox Table 4: the average number of
// phases CGM needs for random Fig. 7 matrices, n = 32, 128 and 512, every
// density d the paper lists, 300 samples each (as in the paper). Prints ours
// beside the paper's with the deviation, plus our min/max and scheduling time
// (the paper's "comp" is CM-5 node milliseconds, so only its growth compares).
// Exits with status 1 if any average is more than 4% off the paper's.
//
//   table4_reproduction [samples] [seed]

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <switchyard/schedulers/phase_statistics.hpp>

namespace {

struct Row {
  unsigned n, d;
  double perm;  // the paper's average
  double comp;  // the paper's scheduling time on the CM-5, ms
};

// Table 4 of Ranka, Wang and Fox, "Static and Runtime Algorithms for
// All-to-Many Personalized Communication on Permutation Networks".
const std::vector<Row> kPaper = {
    {32, 1, 1.0, 0.6},         {32, 2, 3.0, 1.4},         {32, 4, 5.6, 2.6},         {32, 8, 10.2, 5.0},
    {32, 16, 18.5, 9.9},       {32, 24, 26.5, 14.9},      {32, 31, 34.2, 19.9},      {128, 1, 1.0, 2.8},
    {128, 2, 3.0, 6.0},        {128, 4, 6.0, 11.6},       {128, 8, 10.7, 22.4},      {128, 16, 19.5, 44.2},
    {128, 32, 36.3, 91.0},     {128, 64, 68.8, 190.0},    {128, 96, 100.7, 291.7},   {128, 127, 132.4, 394.9},
    {512, 1, 1.0, 11.0},       {512, 2, 3.0, 24.1},       {512, 4, 6.1, 47.3},       {512, 8, 11.1, 92.3},
    {512, 16, 20.0, 183.3},    {512, 32, 37.1, 377.5},    {512, 64, 70.3, 813.6},    {512, 128, 135.4, 1786.0},
    {512, 256, 263.7, 3892.9}, {512, 384, 391.2, 6068.9}, {512, 511, 519.0, 8306.7},
};

constexpr double kTolerancePercent = 4.0;

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::uint32_t samples = argc > 1 ? static_cast<std::uint32_t>(std::stoul(argv[1])) : 300;
    const std::uint64_t seed = argc > 2 ? std::stoull(argv[2]) : 1994;
    std::printf("Ranka-Wang-Fox Table 4, CGM phases (perm): %u Fig. 7 samples per row, seed %llu\n", samples,
                static_cast<unsigned long long>(seed));
    std::printf("%5s %5s | %8s %8s %8s | %6s %6s %6s | %10s %10s\n", "n", "d", "paper", "ours", "dev%", "min", "max",
                "d+logd", "ours ms", "paper ms");
    int off = 0;
    double worst = 0;
    for (const Row& r : kPaper) {
      const auto st = switchyard::schedulers::phase_statistics("cgm", r.n, r.d, samples, seed);
      const double dev = 100.0 * (st.avg - r.perm) / r.perm;
      const bool ok = std::abs(dev) <= kTolerancePercent;
      off += ok ? 0 : 1;
      worst = std::max(worst, std::abs(dev));
      std::printf("%5u %5u | %8.1f %8.2f %+7.2f%s | %6llu %6llu %6.1f | %10.4f %10.1f\n", r.n, r.d, r.perm, st.avg, dev,
                  ok ? " " : "!", static_cast<unsigned long long>(st.min), static_cast<unsigned long long>(st.max),
                  r.d + std::log2(static_cast<double>(r.d)), st.schedule_ms_avg, r.comp);
      std::fflush(stdout);
    }
    std::printf("worst deviation %.2f%%; %d of %zu rows outside +-%.0f%%\n", worst, off, kPaper.size(),
                kTolerancePercent);
    return off == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "table4_reproduction: %s\n", e.what());
    return 2;
  }
}
