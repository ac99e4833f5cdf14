#include "switchyard/halo/row_partition.hpp"

#include <string>

#include "switchyard/errors.hpp"

namespace switchyard::halo {

RowPartition RowPartition::blocks(GlobalIndex rows, Rank parts) {
  if (parts == 0) throw InvalidArgument("switchyard: RowPartition::blocks: at least one part is needed");
  std::vector<Rank> owner(rows);
  const GlobalIndex base = rows / parts, longer = rows % parts;
  GlobalIndex row = 0;
  for (Rank p = 0; p < parts; ++p) {
    for (GlobalIndex k = 0; k < base + (p < longer ? 1 : 0); ++k) owner[row++] = p;
  }
  return owners(std::move(owner), parts);
}

RowPartition RowPartition::owners(std::vector<Rank> owner_of_row, Rank parts) {
  if (parts == 0) throw InvalidArgument("switchyard: RowPartition::owners: at least one part is needed");
  RowPartition r;
  r.start_.assign(std::size_t{parts} + 1, 0);
  for (GlobalIndex i = 0; i < owner_of_row.size(); ++i) {
    if (owner_of_row[i] >= parts) {
      throw InvalidArgument("switchyard: RowPartition::owners: row " + std::to_string(i) + " goes to part " +
                            std::to_string(owner_of_row[i]) + ", beyond the " + std::to_string(parts) + " parts");
    }
    ++r.start_[owner_of_row[i] + 1];
  }
  for (Rank p = 0; p < parts; ++p) r.start_[p + 1] += r.start_[p];
  r.order_.resize(owner_of_row.size());
  r.position_.resize(owner_of_row.size());
  std::vector<GlobalIndex> next(r.start_.begin(), r.start_.end() - 1);
  for (GlobalIndex i = 0; i < owner_of_row.size(); ++i) {
    const Rank p = owner_of_row[i];
    r.position_[i] = next[p] - r.start_[p];
    r.order_[next[p]++] = i;
  }
  r.owner_ = std::move(owner_of_row);
  return r;
}

}  // namespace switchyard::halo
