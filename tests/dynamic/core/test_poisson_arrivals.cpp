// The producers' arrival process: reproducible per (seed, stream), exponential
// gaps of the requested mean, and bad rates refused.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <switchyard/dynamic/poisson_arrivals.hpp>

namespace sd = switchyard::dynamic;

TEST(PoissonArrivals, SameSeedAndStreamGiveTheSameTimes) {
  sd::PoissonArrivals a(0.25, 7, 3), b(0.25, 7, 3), other(0.25, 7, 4);
  int differing = 0;
  for (int i = 0; i < 1000; ++i) {
    const double t = a.next();
    EXPECT_EQ(t, b.next());
    differing += t != other.next();
  }
  EXPECT_EQ(differing, 1000);
}

TEST(PoissonArrivals, GapsAreExponentialWithMeanOneOverRate) {
  const double rate = 0.125;
  sd::PoissonArrivals arrivals(rate, 42, 0);
  constexpr int kDraws = 200000;
  double previous = 0, sum = 0, sum_sq = 0;
  int over_mean = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double t = arrivals.next();
    const double gap = t - previous;
    ASSERT_GT(gap, 0);
    previous = t;
    sum += gap;
    sum_sq += gap * gap;
    over_mean += gap > 1 / rate;
  }
  const double mean = sum / kDraws;
  const double variance = sum_sq / kDraws - mean * mean;
  // The mean's standard error is (1/rate)/sqrt(kDraws), 0.22 % here: 1 % is 4.5 of them.
  EXPECT_NEAR(mean * rate, 1.0, 0.01);
  // Exponential: the variance is the mean squared, and P(gap > mean) = 1/e.
  EXPECT_NEAR(variance * rate * rate, 1.0, 0.03);
  EXPECT_NEAR(static_cast<double>(over_mean) / kDraws, std::exp(-1.0), 0.005);
}

TEST(PoissonArrivals, RatesThatAreNotPositiveAndFiniteAreRefused) {
  for (double rate : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(sd::PoissonArrivals(rate, 1, 0), switchyard::InvalidArgument) << rate;
  }
}
