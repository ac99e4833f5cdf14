#include "switchyard/schedulers/redistribution/layout.hpp"

#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::schedulers::redistribution {

namespace {

// "1000x1000", as parse_extent reads it.
std::string extent_text(const std::vector<Index>& extent) {
  std::string e;
  for (std::size_t k = 0; k < extent.size(); ++k) {
    if (k) e += 'x';
    e += std::to_string(extent[k]);
  }
  return e.empty() ? "no extents" : e;
}

[[noreturn]] void bad_layout(const std::vector<Index>& extent, const Distribution& d, const std::string& what) {
  throw InvalidArgument("switchyard: layout " + d.str() + " over " + extent_text(extent) + ": " + what);
}

// Calls f(index) for every multi-index of `extent` in row-major order, with the
// running row-major offset; nothing for an empty extent list.
template <class F>
void for_each_index(const std::vector<Index>& extent, F&& f) {
  if (extent.empty()) return;
  std::vector<Index> idx(extent.size(), 0);
  for (Index offset = 0;; ++offset) {
    f(std::span<const Index>(idx), offset);
    std::size_t d = extent.size();
    while (d > 0 && ++idx[d - 1] == extent[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

}  // namespace

Layout::Layout(std::vector<Index> extent, Distribution distribution)
    : extent_(std::move(extent)), distribution_(std::move(distribution)) {
  const auto& dims = distribution_.dims;
  const auto& grid = distribution_.grid;
  if (dims.size() != grid.size()) {
    bad_layout(extent_, distribution_,
               std::to_string(dims.size()) + " distributed dimension(s) on a " + std::to_string(grid.size()) +
                   "-dimensional grid");
  }
  if (extent_.empty()) bad_layout(extent_, distribution_, "the array has no dimensions");
  if (extent_.size() != dims.size()) {
    bad_layout(extent_, distribution_,
               "a " + std::to_string(extent_.size()) + "-dimensional array with a " + std::to_string(dims.size()) +
                   "-dimensional distribution (the grid needs one axis per array dimension)");
  }
  elements_ = 1;
  Index processes = 1;
  for (std::size_t d = 0; d < extent_.size(); ++d) {
    const std::string axis = "dimension " + std::to_string(d + 1) + ": ";
    if (extent_[d] <= 0) bad_layout(extent_, distribution_, axis + "the extent must be positive");
    if (elements_ > kMaxElements / extent_[d]) {
      bad_layout(extent_, distribution_, "more than " + std::to_string(kMaxElements) + " elements");
    }
    elements_ *= extent_[d];
    if (grid[d] <= 0 || grid[d] > kMaxProcesses / processes) {
      bad_layout(
          extent_, distribution_,
          axis + "the grid axis must be positive and the grid at most " + std::to_string(kMaxProcesses) + " processes");
    }
    processes *= grid[d];
    const Index b = dims[d].kind == DimKind::block ? (extent_[d] + grid[d] - 1) / grid[d] : dims[d].block;
    if (b <= 0) bad_layout(extent_, distribution_, axis + "the block size must be positive");
    if (b > kMaxElements / grid[d]) bad_layout(extent_, distribution_, axis + "the block size is too large");
    block_.push_back(b);
  }
  processes_ = static_cast<Rank>(processes);
}

std::string Layout::str() const { return distribution_.str() + " over " + extent_text(extent_); }

std::vector<Index> Layout::coordinates(Rank p) const {
  if (p >= processes_) {
    throw InvalidArgument("switchyard: layout " + str() + ": process " + std::to_string(p) + " is outside 0.." +
                          std::to_string(processes_ - 1));
  }
  std::vector<Index> c(rank());
  Index rest = p;
  for (std::size_t d = rank(); d-- > 0;) {
    c[d] = rest % grid(d);
    rest /= grid(d);
  }
  return c;
}

Rank Layout::process_at(std::span<const Index> coordinates) const {
  if (coordinates.size() != rank()) {
    throw InvalidArgument("switchyard: layout " + str() + ": " + std::to_string(coordinates.size()) +
                          " grid coordinates for a " + std::to_string(rank()) + "-dimensional grid");
  }
  Index p = 0;
  for (std::size_t d = 0; d < rank(); ++d) {
    if (coordinates[d] < 0 || coordinates[d] >= grid(d)) {
      throw InvalidArgument("switchyard: layout " + str() + ": grid coordinate " + std::to_string(coordinates[d]) +
                            " is outside 0.." + std::to_string(grid(d) - 1) + " along dimension " +
                            std::to_string(d + 1));
    }
    p = p * grid(d) + coordinates[d];
  }
  return static_cast<Rank>(p);
}

Index Layout::owner(std::size_t d, Index g) const { return (g / block(d)) % grid(d); }

Index Layout::local_index(std::size_t d, Index g) const {
  const Index b = block(d), s = b * grid(d);
  const Index rel = g - owner(d, g) * b;
  return (rel / s) * b + rel % s;
}

LddSet Layout::ldd(std::size_t d, Index i) const {
  const Index n = extent_.at(d), b = block(d), s = b * grid(d), o = i * b;
  if (i < 0 || i >= grid(d)) {
    throw InvalidArgument("switchyard: layout " + str() + ": grid coordinate " + std::to_string(i) + " is outside 0.." +
                          std::to_string(grid(d) - 1) + " along dimension " + std::to_string(d + 1));
  }
  if (o >= n) return {};
  const Index blocks = (n - o + s - 1) / s;  // blocks starting inside the array
  const Index last = o + (blocks - 1) * s;
  if (n - last >= b) return {Ldd{o, b, s, blocks}};
  // The last block is cut by the end of the array: an LDD of its own.
  LddSet set;
  if (blocks > 1) set.push_back(Ldd{o, b, s, blocks - 1});
  set.push_back(Ldd{last, n - last, s, 1});
  return set;
}

Index Layout::local_extent(std::size_t d, Index i) const { return size(ldd(d, i)); }

MultiLdd Layout::ldd(Rank p) const {
  const auto c = coordinates(p);
  MultiLdd m;
  for (std::size_t d = 0; d < rank(); ++d) m.dims.push_back(ldd(d, c[d]));
  return m;
}

std::vector<Index> Layout::local_extents(Rank p) const {
  const auto c = coordinates(p);
  std::vector<Index> e(rank());
  for (std::size_t d = 0; d < rank(); ++d) e[d] = local_extent(d, c[d]);
  return e;
}

Index Layout::local_size(Rank p) const {
  Index total = 1;
  for (Index e : local_extents(p)) total *= e;
  return total;
}

Rank Layout::owner(std::span<const Index> global) const {
  if (global.size() != rank()) {
    throw InvalidArgument("switchyard: layout " + str() + ": a " + std::to_string(global.size()) +
                          "-dimensional index into a " + std::to_string(rank()) + "-dimensional array");
  }
  std::vector<Index> c(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    if (global[d] < 0 || global[d] >= extent_[d]) {
      throw InvalidArgument("switchyard: layout " + str() + ": index " + std::to_string(global[d]) + " is outside 0.." +
                            std::to_string(extent_[d] - 1) + " along dimension " + std::to_string(d + 1));
    }
    c[d] = owner(d, global[d]);
  }
  return process_at(c);
}

Index Layout::local_offset(Rank p, std::span<const Index> global) const {
  if (owner(global) != p) {
    throw InvalidArgument("switchyard: layout " + str() + ": process " + std::to_string(p) +
                          " does not own the element asked for");
  }
  const auto e = local_extents(p);
  Index offset = 0;
  for (std::size_t d = 0; d < rank(); ++d) offset = offset * e[d] + local_index(d, global[d]);
  return offset;
}

std::vector<std::vector<double>> Layout::scatter(std::span<const double> global) const {
  if (static_cast<Index>(global.size()) != elements_) {
    throw InvalidArgument("switchyard: scatter onto " + str() + ": the global array has " +
                          std::to_string(global.size()) + " elements, the layout " + std::to_string(elements_));
  }
  std::vector<std::vector<double>> local(processes_);
  std::vector<std::vector<Index>> extents(processes_);
  for (Rank p = 0; p < processes_; ++p) {
    local[p].resize(static_cast<std::size_t>(local_size(p)));
    extents[p] = local_extents(p);
  }
  for_each_index(extent_, [&](std::span<const Index> g, Index offset) {
    Index p = 0, at = 0;
    for (std::size_t d = 0; d < rank(); ++d) p = p * grid(d) + owner(d, g[d]);
    for (std::size_t d = 0; d < rank(); ++d) at = at * extents[p][d] + local_index(d, g[d]);
    local[p][static_cast<std::size_t>(at)] = global[static_cast<std::size_t>(offset)];
  });
  return local;
}

std::vector<double> Layout::gather(std::span<const std::span<const double>> local) const {
  if (local.size() != processes_) {
    throw InvalidArgument("switchyard: gather from " + str() + ": " + std::to_string(local.size()) +
                          " local arrays for " + std::to_string(processes_) + " processes");
  }
  std::vector<std::vector<Index>> extents(processes_);
  for (Rank p = 0; p < processes_; ++p) {
    if (static_cast<Index>(local[p].size()) != local_size(p)) {
      throw InvalidArgument("switchyard: gather from " + str() + ": process " + std::to_string(p) + "'s array has " +
                            std::to_string(local[p].size()) + " elements, it owns " + std::to_string(local_size(p)));
    }
    extents[p] = local_extents(p);
  }
  std::vector<double> global(static_cast<std::size_t>(elements_));
  for_each_index(extent_, [&](std::span<const Index> g, Index offset) {
    Index p = 0, at = 0;
    for (std::size_t d = 0; d < rank(); ++d) p = p * grid(d) + owner(d, g[d]);
    for (std::size_t d = 0; d < rank(); ++d) at = at * extents[p][d] + local_index(d, g[d]);
    global[static_cast<std::size_t>(offset)] = local[p][static_cast<std::size_t>(at)];
  });
  return global;
}

}  // namespace switchyard::schedulers::redistribution
