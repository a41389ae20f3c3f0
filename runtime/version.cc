#include "runtime/version.h"

namespace dsrt {

const char* version() { return "0.1.0"; }

}  // namespace dsrt
