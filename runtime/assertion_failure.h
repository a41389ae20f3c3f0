#pragma once
// What libdsrt throws where DeepSpeed fails an `assert` a script may rely on (DeepSpeed's own tests expect
// AssertionError there): the Python package turns it into AssertionError (python/csrc/errors.cc), C++ callers
// see a std::logic_error with the same one-line message.

#include <stdexcept>

namespace dsrt {

class AssertionFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace dsrt
