#include "agent/store_wire.h"

#include <cstring>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::agent {
namespace {

/// The query bytes of each release, in byte order (c10d's QueryType enums: 1.13's TCPStore.cpp and 2.x's
/// TCPStoreBackend.hpp). Unserved: WATCH_KEY (1.13), the QUEUE_* queries and anything newer (2.x).
constexpr StoreQuery kTorch1[] = {StoreQuery::Set,     StoreQuery::CompareSet, StoreQuery::Get,
                                  StoreQuery::Add,     StoreQuery::Check,      StoreQuery::Wait,
                                  StoreQuery::NumKeys, StoreQuery::Unserved,   StoreQuery::DeleteKey,
                                  StoreQuery::Append,  StoreQuery::MultiGet,   StoreQuery::MultiSet,
                                  StoreQuery::CancelWait};
constexpr StoreQuery kTorch2[] = {StoreQuery::Validate,  StoreQuery::Set,      StoreQuery::CompareSet,
                                  StoreQuery::Get,       StoreQuery::Add,      StoreQuery::Check,
                                  StoreQuery::Wait,      StoreQuery::NumKeys,  StoreQuery::DeleteKey,
                                  StoreQuery::Append,    StoreQuery::MultiGet, StoreQuery::MultiSet,
                                  StoreQuery::CancelWait, StoreQuery::Ping};

template <size_t N>
StoreQuery lookup(const StoreQuery (&table)[N], uint8_t byte) {
  return byte < N ? table[byte] : StoreQuery::Unserved;
}

/// Reads fixed-size values and length-prefixed strings from the buffer; any read past its end fails (incomplete).
class Reader {
 public:
  explicit Reader(const std::string& buffer) : buffer_(buffer) {}
  template <typename T>
  bool value(T& out) {
    if (buffer_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&out, buffer_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(std::string& out) {
    uint64_t n = 0;
    if (!value(n)) return false;
    if (n > kMaxStoreBytes) throw Error(strCat("store request: a key or value of ", n, " bytes (at most ", kMaxStoreBytes, ")"));
    if (buffer_.size() - pos_ < n) return false;
    out.assign(buffer_, pos_, n);
    pos_ += n;
    return true;
  }
  bool count(uint64_t& n) {
    if (!value(n)) return false;
    if (n > kMaxStoreBytes) throw Error(strCat("store request: ", n, " keys (at most ", kMaxStoreBytes, ")"));
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& buffer_;
  size_t pos_ = 0;
};

/// Parses the arguments of `m.query`; false: incomplete.
bool readArguments(Reader& r, StoreMessage& m) {
  std::string a, b, c;
  uint64_t n = 0;
  switch (m.query) {
    case StoreQuery::Validate:
    case StoreQuery::Ping: {
      uint32_t v = 0;
      if (!r.value(v)) return false;
      m.number = v;
      return true;
    }
    case StoreQuery::Set:
    case StoreQuery::Append:
      if (!r.bytes(a) || !r.bytes(b)) return false;
      m.keys = {a};
      m.values = {b};
      return true;
    case StoreQuery::CompareSet:
      if (!r.bytes(a) || !r.bytes(b) || !r.bytes(c)) return false;
      m.keys = {a};
      m.values = {b, c};
      return true;
    case StoreQuery::Get:
    case StoreQuery::DeleteKey:
      if (!r.bytes(a)) return false;
      m.keys = {a};
      return true;
    case StoreQuery::Add: {
      int64_t delta = 0;
      if (!r.bytes(a) || !r.value(delta)) return false;
      m.keys = {a};
      m.number = delta;
      return true;
    }
    case StoreQuery::Check:
    case StoreQuery::Wait:
    case StoreQuery::MultiGet:
      if (!r.count(n)) return false;
      for (uint64_t i = 0; i < n; ++i) {
        if (!r.bytes(a)) return false;
        m.keys.push_back(a);
      }
      return true;
    case StoreQuery::MultiSet:
      if (!r.count(n)) return false;
      for (uint64_t i = 0; i < n; ++i) {
        if (!r.bytes(a) || !r.bytes(b)) return false;
        m.keys.push_back(a);
        m.values.push_back(b);
      }
      return true;
    case StoreQuery::NumKeys:
    case StoreQuery::CancelWait:
    case StoreQuery::Unserved:
      return true;
  }
  return true;
}

}  // namespace

std::optional<StoreMessage> StoreParser::next() {
  if (buffer_.empty()) return std::nullopt;
  const auto byte = static_cast<uint8_t>(buffer_[0]);
  if (dialect_ == StoreDialect::Unknown) {
    // 2.x's first request is VALIDATE (byte 0) and its magic; 1.13's byte 0 is SET, whose next 8 bytes are a key
    // length, which never has the magic in its low half.
    if (byte == 0 && buffer_.size() < 5) return std::nullopt;
    uint32_t magic = 0;
    if (byte == 0) std::memcpy(&magic, buffer_.data() + 1, sizeof magic);
    dialect_ = byte == 0 && magic == kStoreValidationMagic ? StoreDialect::Torch2 : StoreDialect::Torch1;
  }
  StoreMessage m;
  m.byte = byte;
  m.query = dialect_ == StoreDialect::Torch2 ? lookup(kTorch2, byte) : lookup(kTorch1, byte);
  Reader r(buffer_);
  uint8_t skip = 0;
  r.value(skip);
  if (!readArguments(r, m)) return std::nullopt;
  buffer_.erase(0, r.pos());
  return m;
}

void appendStoreBytes(std::string& out, const std::string& bytes) {
  const uint64_t n = bytes.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(bytes);
}

void appendStoreInt64(std::string& out, int64_t value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); }

void appendStoreUint32(std::string& out, uint32_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void appendStoreByte(std::string& out, uint8_t value) { out.push_back(static_cast<char>(value)); }

std::string storeQueryName(const StoreMessage& message) {
  switch (message.query) {
    case StoreQuery::Validate: return "VALIDATE";
    case StoreQuery::Set: return "SET";
    case StoreQuery::CompareSet: return "COMPARE_SET";
    case StoreQuery::Get: return "GET";
    case StoreQuery::Add: return "ADD";
    case StoreQuery::Check: return "CHECK";
    case StoreQuery::Wait: return "WAIT";
    case StoreQuery::NumKeys: return "GETNUMKEYS";
    case StoreQuery::DeleteKey: return "DELETE_KEY";
    case StoreQuery::Append: return "APPEND";
    case StoreQuery::MultiGet: return "MULTI_GET";
    case StoreQuery::MultiSet: return "MULTI_SET";
    case StoreQuery::CancelWait: return "CANCEL_WAIT";
    case StoreQuery::Ping: return "PING";
    case StoreQuery::Unserved: break;
  }
  return strCat("query ", static_cast<int>(message.byte));
}

}  // namespace dsrun::agent
