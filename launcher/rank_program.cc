#include "launcher/rank_program.h"

#include "common/strings.h"

namespace dsrun::launcher {

std::vector<std::string> rankArgv(const RankProgram& program, int localRank) {
  std::vector<std::string> argv;
  if (!program.launch.noPython) {
    argv = {program.launch.python, "-u"};
    if (program.launch.module) argv.push_back("-m");
  }
  argv.push_back(program.script);
  if (!program.launch.noLocalRank) argv.push_back(strCat("--local_rank=", localRank));
  argv.insert(argv.end(), program.args.begin(), program.args.end());
  return argv;
}

}  // namespace dsrun::launcher
