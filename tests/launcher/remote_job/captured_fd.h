#pragma once
// CapturedFd: a temporary file a LineSink writes to, read back whole, so driver tests assert dsrun's output.

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

namespace dsrun::launcher::test {

class CapturedFd {
 public:
  CapturedFd() : file_(std::tmpfile()) { REQUIRE(file_ != nullptr); }
  ~CapturedFd() { std::fclose(file_); }
  CapturedFd(const CapturedFd&) = delete;
  CapturedFd& operator=(const CapturedFd&) = delete;
  int fd() const { return fileno(file_); }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) out.append(buffer, n);
    return out;
  }

 private:
  std::FILE* file_;
};

}  // namespace dsrun::launcher::test
