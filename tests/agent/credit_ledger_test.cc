// CreditLedger: the parent's credit goes back to the children whose bytes it covers, first in first out.
#include "agent/credit_ledger.h"

#include <catch2/catch.hpp>

using dsrun::agent::CreditLedger;
using Owed = std::vector<std::pair<uint64_t, uint64_t>>;

TEST_CASE("credit returns to each child the bytes of its that the parent has written out, in the order sent",
          "[agent][tree][credit]") {
  CreditLedger ledger;
  ledger.sent(1, 100);
  ledger.sent(CreditLedger::kOwn, 50);
  ledger.sent(2, 30);
  ledger.sent(1, 20);
  CHECK(ledger.outstanding() == 200);
  // 120 bytes written out: child 1's first 100, the node's own 20 (owed to nobody).
  CHECK(ledger.credited(120) == Owed{{1, 100}});
  // The rest of the own bytes, child 2's, and child 1's second run.
  CHECK(ledger.credited(70) == Owed{{2, 30}, {1, 10}});
  CHECK(ledger.outstanding() == 10);
  // Credit beyond what was sent is ignored: nobody gets bytes it did not send.
  CHECK(ledger.credited(1000) == Owed{{1, 10}});
  CHECK(ledger.outstanding() == 0);
  CHECK(ledger.credited(5).empty());
}

TEST_CASE("consecutive bytes of one child are credited as one run, and a forgotten child is owed nothing",
          "[agent][tree][credit]") {
  CreditLedger ledger;
  ledger.sent(3, 10);
  ledger.sent(3, 10);
  ledger.sent(4, 5);
  ledger.forget(3);
  CHECK(ledger.credited(25) == Owed{{4, 5}});
  CHECK(ledger.outstanding() == 0);
}
