#pragma once
// StoreWire: torch's TCPStore protocol as the ranks speak it to their agent (docs/rendezvous.md "What a rank asks
// of the store"). Pure: bytes in, messages out; messages in, bytes out. Each request is one query byte, then its
// arguments: strings and byte vectors as a native u64 length and the bytes, counts as u64, ADD's delta as i64.
// The query bytes differ between torch releases (2.x added VALIDATE at 0 and shifted the rest by one), so the
// parser tells them apart by the first request: torch 2.x always opens with VALIDATE and its magic number, 1.13
// never does (its first request is waitForWorkers' ADD).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsrun::agent {

/// A query by meaning; Unserved: a query byte this agent does not serve (named by StoreMessage::byte).
enum class StoreQuery {
  Validate, Set, CompareSet, Get, Add, Check, Wait, NumKeys, DeleteKey, Append, MultiGet, MultiSet, CancelWait, Ping,
  Unserved
};

/// Which torch speaks on a connection, decided by its first request.
enum class StoreDialect { Unknown, Torch1, Torch2 };

struct StoreMessage {
  StoreQuery query = StoreQuery::Unserved;
  uint8_t byte = 0;               ///< the query byte as received (for the error naming an unserved query)
  std::vector<std::string> keys;  ///< in request order
  std::vector<std::string> values;  ///< SET/APPEND: 1; COMPARE_SET: expected, desired; MULTI_SET: one per key
  int64_t number = 0;             ///< ADD's delta; PING's nonce and VALIDATE's magic (u32)
};

/// torch 2.x's VALIDATE argument.
constexpr uint32_t kStoreValidationMagic = 0x3C85F7CE;
/// Replies of CHECK and WAIT (one byte each).
constexpr uint8_t kStoreReady = 0, kStoreNotReady = 1;
constexpr uint8_t kStoreStopWaiting = 0, kStoreWaitCanceled = 1;

/// Incremental parser of one connection's requests.
class StoreParser {
 public:
  void feed(const char* data, size_t n) { buffer_.append(data, n); }
  /// The next complete request, or nothing until more bytes arrive. An unserved query byte comes back as
  /// StoreQuery::Unserved (the caller closes the connection: its arguments cannot be skipped without knowing them).
  /// Throws dsrun::Error for a request no torch sends (a length beyond kMaxStoreBytes).
  std::optional<StoreMessage> next();
  StoreDialect dialect() const { return dialect_; }

 private:
  std::string buffer_;  ///< received and not yet parsed
  StoreDialect dialect_ = StoreDialect::Unknown;
};

/// Longest key or value accepted (torch's own are < 1 KiB; a Gloo address or an NCCL id is 128 bytes).
constexpr uint64_t kMaxStoreBytes = 64u << 20;

/// Reply encoders (native byte order, as torch's tcputil sends them).
void appendStoreBytes(std::string& out, const std::string& bytes);  ///< u64 length + bytes (GET, COMPARE_SET, MULTI_GET)
void appendStoreInt64(std::string& out, int64_t value);             ///< ADD, GETNUMKEYS, DELETE_KEY
void appendStoreUint32(std::string& out, uint32_t value);           ///< PING
void appendStoreByte(std::string& out, uint8_t value);              ///< CHECK, WAIT, CANCEL_WAIT

/// "SET", "WAIT", ...; for an unserved query, "query N".
std::string storeQueryName(const StoreMessage& message);

}  // namespace dsrun::agent
