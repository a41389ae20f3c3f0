#pragma once
// Version of libdsrt, for logs and checkpoint metadata.

namespace dsrt {

/// "MAJOR.MINOR.PATCH" of the runtime library.
const char* version();

}  // namespace dsrt
