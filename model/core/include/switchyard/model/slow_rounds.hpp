#pragma once
// Rounds of a calibration in which the host slowed this machine's cores down.
// Besides the co-located state (colocation.hpp), the host has others that
// come and go within seconds, seen in calibrations on the same day:
// - in one, a 16 KiB copy on one core took 2.2-3.7 times its normal time
//   while a 64-byte message on one core took at most 1.5 times;
// - in another, both took 1.3-1.6 times as long.
// A calibration that kept such rounds described neither state: its unit came
// out about a quarter above the calibrations before and after, its packing
// at 7.0 units a piece against 2.9-3.8, and auto's worst collective regret
// measured with it was 1.57. They show in those two figures, each against the
// same figure in the calibration's fastest round for it. (So a calibration
// taken in such a state from its first round to its last is not told apart:
// one came out at about 1.8 times the normal unit with its 3 slowest rounds
// left out.) The times: docs/cost-model.md, "The host's states".

#include <span>
#include <vector>

namespace switchyard::model {

/// A round in which a figure exceeds this multiple of the figure's fastest
/// round is slow. In normal rounds the copy came within 1.22 of the fastest
/// (often the first round, whose copy runs 12 % faster than the rest's) and
/// the message within 1.19; in slow ones the copy took 1.25-4 times as long,
/// the message 1.4-1.6 times when the copy was under 1.4 (the second state).
inline constexpr double kSlowRoundFactor = 1.3;

/// Per round, whether it is slow: figures[f][k] is figure f's time in round k
/// (ns). Needs at least one figure, each with one time per round (the same
/// number of rounds, at least one), all finite and > 0, and a finite factor >=
/// 1; else std::invalid_argument.
std::vector<bool> detect_slow_rounds(std::span<const std::vector<double>> figures, double factor = kSlowRoundFactor);

}  // namespace switchyard::model
