#pragma once
// A fresh directory under $TMPDIR (or /tmp), removed with its contents when the object dies.

#include <cstdlib>
#include <string>

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base ? base : "/tmp") + "/dsrun-test-XXXXXX";
    path_ = mkdtemp(templ.data()) ? templ : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;  ///< absolute path; empty if creation failed
};
