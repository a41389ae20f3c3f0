#include "proto/tree_delta.h"

#include "common/error.h"

namespace dsrun::proto {
namespace {

bool sameNames(const wire::RankLaunch& a, const wire::RankLaunch& b) {
  if (a.env_size() != b.env_size()) return false;
  for (int i = 0; i < a.env_size(); ++i) {
    if (a.env(i).name() != b.env(i).name()) return false;
  }
  return true;
}

/// One position per value, each inside the template: anything else means the delta was made for another
/// template (rankDelta never repeats a position; a repeated one would only let the later value win).
void checkIndexes(const google::protobuf::RepeatedField<uint32_t>& index, int valueCount, int size, int rank,
                  const char* what) {
  if (index.size() != valueCount) {
    throw Error(strCat("tree launch: rank ", rank, ": ", index.size(), " ", what, " positions for ", valueCount,
                       " values"));
  }
  for (uint32_t i : index) {
    if (i >= static_cast<uint32_t>(size)) {
      throw Error(strCat("tree launch: rank ", rank, ": ", what, " position ", i, " is past the template's ", size,
                         " entries"));
    }
  }
}

}  // namespace

wire::RankDelta rankDelta(const wire::RankLaunch& rankTemplate, const wire::RankLaunch& rank) {
  wire::RankDelta d;
  fillRankDelta(rankTemplate, rank, d);
  return d;
}

void fillRankDelta(const wire::RankLaunch& rankTemplate, const wire::RankLaunch& rank, wire::RankDelta& d) {
  d.set_rank(rank.rank());
  d.set_local_rank(rank.local_rank());
  if (rank.argv_size() == rankTemplate.argv_size()) {
    for (int i = 0; i < rank.argv_size(); ++i) {
      if (rank.argv(i) == rankTemplate.argv(i)) continue;
      d.add_argv_index(static_cast<uint32_t>(i));
      d.add_argv_value(rank.argv(i));
    }
  } else {
    d.set_argv_replaced(true);
    for (const auto& word : rank.argv()) d.add_argv_value(word);
  }
  if (sameNames(rankTemplate, rank)) {
    for (int i = 0; i < rank.env_size(); ++i) {
      if (rank.env(i).value() == rankTemplate.env(i).value()) continue;
      d.add_env_index(static_cast<uint32_t>(i));
      d.add_env_value(rank.env(i).value());
    }
  } else {
    d.set_env_replaced(true);
    *d.mutable_env_full() = rank.env();
  }
  if (rank.cwd() != rankTemplate.cwd()) {
    d.set_cwd_replaced(true);
    d.set_cwd(rank.cwd());
  }
  *d.mutable_cores() = rank.cores();
}

wire::RankLaunch applyRankDelta(const wire::RankLaunch& rankTemplate, const wire::RankDelta& delta) {
  wire::RankLaunch r;
  r.set_rank(delta.rank());
  r.set_local_rank(delta.local_rank());
  if (delta.argv_replaced()) {
    if (delta.argv_index_size() != 0) {
      throw Error(strCat("tree launch: rank ", delta.rank(), ": a replaced argv with positions"));
    }
    *r.mutable_argv() = delta.argv_value();
  } else {
    checkIndexes(delta.argv_index(), delta.argv_value_size(), rankTemplate.argv_size(), delta.rank(), "argv");
    *r.mutable_argv() = rankTemplate.argv();
    for (int i = 0; i < delta.argv_index_size(); ++i) *r.mutable_argv(static_cast<int>(delta.argv_index(i))) = delta.argv_value(i);
  }
  if (delta.env_replaced()) {
    if (delta.env_index_size() != 0 || delta.env_value_size() != 0) {
      throw Error(strCat("tree launch: rank ", delta.rank(), ": a replaced environment with positions"));
    }
    *r.mutable_env() = delta.env_full();
  } else {
    if (delta.env_full_size() != 0) {
      throw Error(strCat("tree launch: rank ", delta.rank(), ": a full environment without env_replaced"));
    }
    checkIndexes(delta.env_index(), delta.env_value_size(), rankTemplate.env_size(), delta.rank(), "env");
    *r.mutable_env() = rankTemplate.env();
    for (int i = 0; i < delta.env_index_size(); ++i) {
      r.mutable_env(static_cast<int>(delta.env_index(i)))->set_value(delta.env_value(i));
    }
  }
  r.set_cwd(delta.cwd_replaced() ? delta.cwd() : rankTemplate.cwd());
  *r.mutable_cores() = delta.cores();
  return r;
}

}  // namespace dsrun::proto
