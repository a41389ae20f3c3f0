#include "launcher/resource_spec.h"

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

int parseSlot(const std::string& flag, std::string_view text, const std::string& field) {
  long long slot = 0;
  bool digitsOnly = !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
  if (!digitsOnly || !parseInt(field, slot) || slot > std::numeric_limits<int>::max()) {
    throw ParseError(strCat(flag, " '", text, "'"), 0,
                     strCat("slot must be a non-negative integer, got '", field, "'"));
  }
  return static_cast<int>(slot);
}

HostSlots* findHost(std::vector<HostSlots>& hosts, const std::string& name) {
  for (auto& h : hosts) {
    if (h.host == name) return &h;
  }
  return nullptr;
}

const HostSlots* findHost(const ResourcePool& hosts, const std::string& name) {
  for (const auto& h : hosts) {
    if (h.host == name) return &h;
  }
  return nullptr;
}

std::string hostNames(const ResourcePool& pool) {
  std::vector<std::string> names;
  for (const auto& h : pool) names.push_back(h.host);
  return join(names, ", ");
}

}  // namespace

std::vector<HostSlots> parseNodeSpecs(std::string_view text, const std::string& flag) {
  std::vector<HostSlots> specs;
  for (const std::string& spec : split(text, '@')) {
    const std::vector<std::string> parts = split(spec, ':');
    if (parts.size() > 2 || parts[0].empty()) {
      throw ParseError(strCat(flag, " '", text, "'"), 0,
                       strCat("expected NAME[:SLOT[,SLOT...]] for each '@'-separated node, got '", spec, "'"));
    }
    HostSlots* entry = findHost(specs, parts[0]);
    if (entry == nullptr) {
      specs.push_back(HostSlots{parts[0], {}});
      entry = &specs.back();
    }
    if (parts.size() == 2) {
      for (const std::string& field : split(parts[1], ',')) {
        entry->slots.push_back(parseSlot(flag, text, field));
      }
    }
  }
  for (auto& entry : specs) {
    std::sort(entry.slots.begin(), entry.slots.end());
    entry.slots.erase(std::unique(entry.slots.begin(), entry.slots.end()), entry.slots.end());
  }
  return specs;
}

ResourcePool applyResourceFilter(const ResourcePool& pool, const std::string& include, const std::string& exclude,
                                 const std::string& poolSource, const std::string& includeFlag,
                                 const std::string& excludeFlag) {
  if (!include.empty() && !exclude.empty()) {
    throw ConfigError(strCat(includeFlag, " and ", excludeFlag, " are mutually exclusive, got ", includeFlag, " '",
                             include, "' and ", excludeFlag, " '", exclude, "'"));
  }
  if (include.empty() && exclude.empty()) return pool;
  const bool including = !include.empty();
  const std::string& text = including ? include : exclude;
  const std::string& flag = including ? includeFlag : excludeFlag;

  // Include builds the selection from nothing; exclude starts from everything and removes.
  std::vector<HostSlots> selected = including ? std::vector<HostSlots>{} : pool;
  for (const HostSlots& spec : parseNodeSpecs(text, flag)) {
    const HostSlots* available = findHost(pool, spec.host);
    if (available == nullptr) {
      throw ConfigError(strCat(flag, " '", text, "': host '", spec.host, "' is not ", poolSource,
                               " (hosts: ", hostNames(pool), ")"));
    }
    for (int slot : spec.slots) {
      if (std::find(available->slots.begin(), available->slots.end(), slot) == available->slots.end()) {
        throw ConfigError(strCat(flag, " '", text, "': host '", spec.host, "' has no slot ", slot,
                                 " (slots: ", formatRangeList(available->slots), ")"));
      }
    }
    if (including) {
      HostSlots* entry = findHost(selected, spec.host);
      if (entry == nullptr) {
        selected.push_back(HostSlots{spec.host, {}});
        entry = &selected.back();
      }
      entry->slots = spec.slots.empty() ? available->slots : spec.slots;
    } else {
      HostSlots* entry = findHost(selected, spec.host);
      if (spec.slots.empty()) {
        entry->slots.clear();
      } else {
        for (int slot : spec.slots) {
          entry->slots.erase(std::remove(entry->slots.begin(), entry->slots.end(), slot), entry->slots.end());
        }
      }
    }
  }

  // Back to the pool's host order (ranks follow it), without duplicates or emptied hosts.
  ResourcePool ordered;
  for (const HostSlots& host : pool) {
    HostSlots* entry = findHost(selected, host.host);
    if (entry == nullptr) continue;
    std::vector<int> unique;
    for (int slot : entry->slots) {
      if (std::find(unique.begin(), unique.end(), slot) == unique.end()) unique.push_back(slot);
    }
    if (!unique.empty()) ordered.push_back(HostSlots{host.host, unique});
  }
  return ordered;
}

std::string formatRangeList(const std::vector<int>& ids) {
  std::string out;
  size_t i = 0;
  while (i < ids.size()) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]);
    if (j > i) out += strCat("-", ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace dsrun::launcher
