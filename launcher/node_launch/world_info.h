#pragma once
// DeepSpeed's --world_info: urlsafe base64 of the JSON {"HOST": [slot, ...], ...} (hosts in launch order),
// as runner.py's encode_world_info writes it and launch.py reads it.

#include <string>
#include <string_view>

#include "launcher/resource_spec.h"

namespace dsrun::launcher {

/// The exact bytes encode_world_info produces (json.dumps separators ", " and ": ", ASCII escapes,
/// base64 with '-' and '_' and '=' padding).
std::string encodeWorldInfo(const ResourcePool& hosts);

/// Decodes what encodeWorldInfo (or DeepSpeed) wrote, keeping host order. Accepts missing padding.
/// Throws ParseError "--world_info: ..." for bad base64, bad JSON or a shape other than {str: [int]}.
ResourcePool decodeWorldInfo(std::string_view base64);

}  // namespace dsrun::launcher
