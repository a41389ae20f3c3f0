#pragma once
// Stack traces of hung ranks (hang detection, docs/elastic_training.md "Hangs"): the one script that takes them
// (eu-stack, else gdb, else the kernel stacks of the threads), run here for local ranks or by an agent for
// remote ones, and the one layout they are written in, DIR/rank<N>.txt.

#include <sys/types.h>

#include <map>
#include <string>

namespace dsrun {

/// The shell script printing the stacks of the process whose pid is its $1; its errors go with its output.
const char* stackScript();

/// Rank -> its stacks, taken on this host by running stackScript() for each pid, each bounded by `timeoutS`
/// (coreutils timeout). Never throws: a rank whose stacks cannot be taken gets why as its text.
std::map<int, std::string> collectLocalStacks(const std::map<int, pid_t>& pids, double timeoutS);

/// Writes each rank's stacks to DIR/rank<N>.txt (creating DIR). Throws IoError naming the file.
void writeStackFiles(const std::string& dir, const std::map<int, std::string>& stacks);

}  // namespace dsrun
