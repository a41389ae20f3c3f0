#include "agent/credit_ledger.h"

#include <algorithm>

namespace dsrun::agent {

void CreditLedger::sent(uint64_t source, uint64_t bytes) {
  if (bytes == 0) return;
  outstanding_ += bytes;
  if (!runs_.empty() && runs_.back().first == source) {
    runs_.back().second += bytes;
  } else {
    runs_.emplace_back(source, bytes);
  }
}

std::vector<std::pair<uint64_t, uint64_t>> CreditLedger::credited(uint64_t bytes) {
  std::vector<std::pair<uint64_t, uint64_t>> owed;
  while (bytes > 0 && !runs_.empty()) {
    auto& [source, left] = runs_.front();
    const uint64_t take = std::min(bytes, left);
    if (source != kOwn) {
      if (!owed.empty() && owed.back().first == source) {
        owed.back().second += take;
      } else {
        owed.emplace_back(source, take);
      }
    }
    left -= take;
    bytes -= take;
    outstanding_ -= take;
    if (left == 0) runs_.pop_front();
  }
  return owed;
}

void CreditLedger::forget(uint64_t source) {
  for (auto& run : runs_) {
    if (run.first == source) run.first = kOwn;
  }
}

}  // namespace dsrun::agent
