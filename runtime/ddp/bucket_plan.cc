#include "runtime/ddp/bucket_plan.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace dsrt::ddp {
namespace {

struct OpenBucket {
  Bucket bucket;
  int64_t cap = 0;
  int64_t order = 0;  // arrival of its first parameter: ties the final flush to readiness order
};

}  // namespace

std::vector<Bucket> planBuckets(const std::vector<ParamSize>& params, int64_t firstBucketBytes,
                                int64_t bucketBytes) {
  if (firstBucketBytes <= 0 || bucketBytes <= 0) {
    throw std::invalid_argument("planBuckets: bucket caps must be positive, got first=" +
                                std::to_string(firstBucketBytes) + " rest=" + std::to_string(bucketBytes));
  }
  std::vector<Bucket> done;
  // Per group key: the bucket being filled. std::map keeps the final flush deterministic.
  std::map<int, OpenBucket> open;
  int64_t arrivals = 0;
  for (int64_t i = static_cast<int64_t>(params.size()) - 1; i >= 0; --i) {
    const ParamSize& p = params[static_cast<size_t>(i)];
    if (p.elementSize <= 0 || p.numel < 0) {
      throw std::invalid_argument("planBuckets: parameter " + std::to_string(i) + " has numel " +
                                  std::to_string(p.numel) + " and element size " + std::to_string(p.elementSize));
    }
    if (p.numel == 0) {
      continue;
    }
    auto it = open.find(p.groupKey);
    if (it == open.end()) {
      OpenBucket ob;
      ob.bucket.groupKey = p.groupKey;
      ob.cap = firstBucketBytes;
      it = open.emplace(p.groupKey, std::move(ob)).first;
    }
    OpenBucket& ob = it->second;
    if (ob.bucket.params.empty()) {
      ob.order = arrivals++;
    }
    ob.bucket.params.push_back(i);
    ob.bucket.offsets.push_back(ob.bucket.numel);
    ob.bucket.numel += p.numel;
    ob.bucket.bytes += p.numel * p.elementSize;
    if (ob.bucket.bytes >= ob.cap) {
      done.push_back(std::move(ob.bucket));
      ob.bucket = Bucket{};
      ob.bucket.groupKey = p.groupKey;
      ob.cap = bucketBytes;
    }
  }
  std::vector<OpenBucket*> rest;
  for (auto& [key, ob] : open) {
    if (!ob.bucket.params.empty()) {
      rest.push_back(&ob);
    }
  }
  std::sort(rest.begin(), rest.end(), [](const OpenBucket* a, const OpenBucket* b) { return a->order < b->order; });
  for (OpenBucket* ob : rest) {
    done.push_back(std::move(ob->bucket));
  }
  return done;
}

}  // namespace dsrt::ddp
