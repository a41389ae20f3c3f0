#include "supervision/stack_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun {

const char* stackScript() {
  // $1 = the pid. Whatever tool there is, its errors go with its output: the reader wants to know why.
  return "if command -v eu-stack >/dev/null 2>&1; then eu-stack -p \"$1\"; "
         "elif command -v gdb >/dev/null 2>&1; then gdb -p \"$1\" -batch -ex 'thread apply all bt'; "
         "else echo \"(no eu-stack or gdb on $(hostname): kernel stacks of pid $1)\"; "
         "for t in /proc/$1/task/*; do echo \"== thread ${t##*/} $(cat $t/comm)\"; cat $t/stack; done; fi 2>&1";
}

std::map<int, std::string> collectLocalStacks(const std::map<int, pid_t>& pids, double timeoutS) {
  std::map<int, std::string> out;
  for (const auto& [rank, pid] : pids) {
    // timeout(1) bounds a debugger stuck on a process in state D; popen is enough for one short command.
    const std::string command =
        strCat("timeout -s KILL ", timeoutS, " sh -c ", shellQuote(stackScript()), " sh ", pid, " 2>&1");
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) {
      out[rank] = strCat("(cannot run the stack script: ", std::strerror(errno), ")\n");
      continue;
    }
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, n);
    ::pclose(pipe);
    out[rank] = std::move(text);
  }
  return out;
}

void writeStackFiles(const std::string& dir, const std::map<int, std::string>& stacks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(dir, "mkdir", ec.value(), "writing the stacks of a hung job");
  for (const auto& [rank, text] : stacks) {
    const std::string path = strCat(dir, "/rank", rank, ".txt");
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) throw IoError(path, "write", errno, "writing the stacks of a hung job");
  }
}

}  // namespace dsrun
