#pragma once
// Lifecycles as explicit transition tables (after flux's broker state machine): a constexpr array of
// {event, from, to} rows; a pair missing from the table is a bug and throws InternalError naming
// both the state and the event. State and Event need a `const char* toString(X)` found by ADL.

#include <cstddef>

#include "common/error.h"

namespace dsrun {

template <typename State, typename Event>
struct Transition {
  Event event;  ///< what happened
  State from;   ///< state it is allowed in
  State to;     ///< resulting state
};

/// The state `event` leads to from `from` in `table`; throws InternalError if the table has no row.
template <typename State, typename Event, size_t N>
State nextState(const Transition<State, Event> (&table)[N], State from, Event event) {
  for (const auto& row : table) {
    if (row.from == from && row.event == event) return row.to;
  }
  throw InternalError(strCat("no transition for event '", toString(event), "' in state '", toString(from), "'"));
}

/// True if `table` has a row for (`from`, `event`).
template <typename State, typename Event, size_t N>
bool hasTransition(const Transition<State, Event> (&table)[N], State from, Event event) {
  for (const auto& row : table) {
    if (row.from == from && row.event == event) return true;
  }
  return false;
}

}  // namespace dsrun
