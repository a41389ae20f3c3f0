#include "launcher/node_launch/world_info.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

namespace {

constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64UrlEncode(std::string_view bytes) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64UrlDecode(std::string_view text) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* at = std::char_traits<char>::find(kAlphabet, 64, c);
    // Standard base64's '+' and '/' are accepted too: a hand-made value may use them.
    int v = at != nullptr ? static_cast<int>(at - kAlphabet) : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (v < 0) throw ParseError("--world_info", 0, strCat("invalid base64 character '", c, "', got '", text, "'"));
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace

std::string encodeWorldInfo(const ResourcePool& hosts) {
  // Python's json.dumps: {"a": [0, 1], "b": [0]} with ensure_ascii.
  std::string json = "{";
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (h > 0) json += ", ";
    json += nlohmann::json(hosts[h].host).dump(-1, ' ', true);
    json += ": [";
    for (size_t s = 0; s < hosts[h].slots.size(); ++s) {
      if (s > 0) json += ", ";
      json += std::to_string(hosts[h].slots[s]);
    }
    json += "]";
  }
  json += "}";
  return base64UrlEncode(json);
}

ResourcePool decodeWorldInfo(std::string_view base64) {
  const std::string text = base64UrlDecode(base64);
  const auto bad = [&](const std::string& what) {
    return ParseError("--world_info", 0, strCat(what, ", got '", text, "'"));
  };
  nlohmann::ordered_json json = nlohmann::ordered_json::parse(text, nullptr, false);
  if (json.is_discarded()) throw bad("not JSON after base64 decoding");
  if (!json.is_object() || json.empty()) throw bad("expected a non-empty object {\"HOST\": [slot, ...]}");
  ResourcePool hosts;
  for (const auto& [name, slots] : json.items()) {
    if (!slots.is_array()) throw bad(strCat("slots of host '", name, "' are not a list"));
    HostSlots host{name, {}};
    for (const auto& slot : slots) {
      if (!slot.is_number_integer() || slot.get<long long>() < 0) {
        throw bad(strCat("slot of host '", name, "' is not a non-negative integer"));
      }
      host.slots.push_back(slot.get<int>());
    }
    if (host.slots.empty()) throw bad(strCat("host '", name, "' has no slots"));
    hosts.push_back(std::move(host));
  }
  return hosts;
}

}  // namespace dsrun::launcher
