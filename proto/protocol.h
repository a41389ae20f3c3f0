#pragma once
// Constants of the dsrun agent protocol shared by `dsrun` and `dsrun-agent`.

#include <cstddef>
#include <cstdint>

namespace dsrun::proto {

/// Bumped on every incompatible change to agent.proto; both sides must agree exactly.
/// 2: RankLaunch argv, env and cwd are bytes (1 refused non-UTF-8 text); Welcome.host_address.
/// 3: Hello.launcher_silence_ms and RankExited.given_up_state: a version-2 agent would accept a newer
///    launcher and silently keep a cut-off node's ranks running for its own, longer timeout, so the versions
///    must meet as an error naming both (the agent's refusal, or the launcher's check of Welcome), not a Welcome.
inline constexpr uint32_t kProtocolVersion = 3;

/// Largest serialized Envelope accepted or produced (a LaunchRequest of many ranks with their full
/// environments stays far below it; anything bigger is treated as an attack or a bug).
inline constexpr size_t kMaxFrameBytes = 16u << 20;

/// Bytes of the length prefix in front of every frame (big-endian u32).
inline constexpr size_t kFrameHeaderBytes = 4;

/// Port `dsrun-agent` listens on and `dsrun --agent_port` connects to by default.
inline constexpr int kDefaultAgentPort = 29600;

}  // namespace dsrun::proto
