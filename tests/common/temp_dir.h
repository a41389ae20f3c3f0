#pragma once
// A fresh directory under $TMPDIR (or /tmp), removed with its contents when the object dies. Shared by
// every test that writes files (tls, agent, local jobs, checkpoints).

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base ? base : "/tmp") + "/dsrun-test-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      throw std::runtime_error("TempDir: mkdtemp(" + templ + "): " + std::strerror(errno));
    }
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover directory is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;  ///< absolute path
};
