#include "switchyard/model/collectives/transfer_log.hpp"

#include <algorithm>

namespace switchyard::model::collectives {

std::vector<LoggedTransfer> TransferLog::sorted() const {
  std::vector<LoggedTransfer> all;
  for (const auto& row : rows_) all.insert(all.end(), row.begin(), row.end());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace switchyard::model::collectives
