#pragma once
// AgentClient moved to client/ (an agent of a tree dials its children with it too); this header keeps the
// launcher's includes of the old path working.
#include "client/agent_client.h"
