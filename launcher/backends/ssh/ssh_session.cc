#include "launcher/backends/ssh/ssh_session.h"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/logging.h"
#include "common/strings.h"
#include "launcher/backends/ssh/ssh_config_lookup.h"

namespace dsrun::launcher {

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string lowerCopy(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// libssh's own messages are dsrun DEBUG lines: its warnings (e.g. with LogLevel ERROR in ssh_config, ~24 lines
// per connection) repeat what dsrun's error already says.
void logFromLibssh(int /*priority*/, const char* function, const char* message, void* /*userdata*/) {
  DSRUN_LOG(DEBUG) << "libssh " << (function != nullptr ? function : "") << ": " << (message != nullptr ? message : "");
}

// libssh's verbosity follows dsrun's: protocol-level messages when DSRUN_LOG_LEVEL=DEBUG, none otherwise.
// Set after the config is parsed, whose LogLevel would otherwise win.
void routeLibsshLogging(ssh_session session) {
  ssh_set_log_callback(logFromLibssh);
  int verbosity = logEnabled(LogLevel::DEBUG) ? SSH_LOG_PROTOCOL : SSH_LOG_NOLOG;
  ssh_options_set(session, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
}

}  // namespace

SshSession::SshSession(const SshTarget& target) {
  session_ = ssh_new();
  if (session_ == nullptr) throw Error(strCat("ssh ", target.host, ": ssh_new failed (out of memory)"));
  try {
    connect(target);
  } catch (...) {
    ssh_disconnect(session_);
    ssh_free(session_);
    throw;
  }
}

void SshSession::connect(const SshTarget& target) {
  routeLibsshLogging(session_);
  ssh_options_set(session_, SSH_OPTIONS_HOST, target.host.c_str());
  long timeout = target.connectTimeoutS;
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &timeout);
  std::string configText;
  if (!target.configFile.empty()) {
    configText = readText(target.configFile);
    // Only this file, not ~/.ssh/config as well (OpenSSH's -F semantics).
    ssh_options_set(session_, SSH_OPTIONS_PROCESS_CONFIG, "no");
    if (ssh_options_parse_config(session_, target.configFile.c_str()) != 0) {
      throw Error(strCat("ssh ", target.host, ": cannot parse ssh config '", target.configFile, "'"));
    }
  } else {
    const char* home = std::getenv("HOME");
    if (home != nullptr) configText = readText(std::string(home) + "/.ssh/config");
    if (ssh_options_parse_config(session_, nullptr) != 0) {
      throw Error(strCat("ssh ", target.host, ": cannot parse ~/.ssh/config"));
    }
  }
  routeLibsshLogging(session_);
  if (target.port) {
    unsigned port = static_cast<unsigned>(*target.port);
    ssh_options_set(session_, SSH_OPTIONS_PORT, &port);
  }
  unsigned port = 22;
  ssh_options_get_port(session_, &port);
  peer_ = strCat(target.host, ":", port);
  const std::string where = target.configFile.empty() ? std::string("~/.ssh/config") : target.configFile;

  if (ssh_connect(session_) != SSH_OK) {
    throw Error(strCat("ssh ", peer_, ": connect: ", ssh_get_error(session_),
                       "\n  hint: check that sshd runs there and that HostName/Port in ", where, " are right"));
  }
  const std::string strict = lowerCopy(sshConfigValue(configText, target.host, "StrictHostKeyChecking").value_or("yes"));
  const ssh_known_hosts_e known = ssh_session_is_known_server(session_);
  const bool acceptAny = strict == "no" || strict == "off";
  const bool acceptNew = strict == "accept-new";
  if (known != SSH_KNOWN_HOSTS_OK && !acceptAny) {
    const bool unknown = known == SSH_KNOWN_HOSTS_NOT_FOUND || known == SSH_KNOWN_HOSTS_UNKNOWN;
    if (!(unknown && acceptNew)) {
      throw Error(strCat("ssh ", peer_, ": host key verification failed (",
                         known == SSH_KNOWN_HOSTS_CHANGED ? "the host key CHANGED"
                         : known == SSH_KNOWN_HOSTS_OTHER ? "a key of another type is known"
                         : unknown                        ? "host not in known_hosts"
                                                          : ssh_get_error(session_),
                         ")\n  hint: add the host key (ssh-keyscan ", target.host, " >> ~/.ssh/known_hosts), or set "
                         "UserKnownHostsFile/StrictHostKeyChecking for it in ", where));
    }
    if (ssh_session_update_known_hosts(session_) != SSH_OK) {
      // accept-new could not record the key: still connect, as OpenSSH does with a warning.
    }
  }
  if (ssh_userauth_none(session_, nullptr) == SSH_AUTH_SUCCESS) return;
  if (ssh_userauth_agent(session_, nullptr) == SSH_AUTH_SUCCESS) return;
  if (ssh_userauth_publickey_auto(session_, nullptr, nullptr) == SSH_AUTH_SUCCESS) return;
  throw Error(strCat("ssh ", peer_, ": authentication failed: ", ssh_get_error(session_),
                     "\n  hint: the host must accept your key without a password: load it into ssh-agent, or set "
                     "User/IdentityFile for it in ", where));
}

SshSession::~SshSession() {
  if (channel_ != nullptr) {
    ssh_channel_close(channel_);
    ssh_channel_free(channel_);
  }
  if (session_ != nullptr) {
    ssh_disconnect(session_);
    ssh_free(session_);
  }
}

void SshSession::exec(const std::string& command) {
  channel_ = ssh_channel_new(session_);
  // A failed channel is dropped, so that sendEof() and exitStatus() on this session stay no-ops.
  const auto fail = [this](const char* what) {
    const std::string message = strCat("ssh ", peer_, ": ", what, ": ", ssh_get_error(session_));
    if (channel_ != nullptr) ssh_channel_free(channel_);
    channel_ = nullptr;
    throw Error(message);
  };
  if (channel_ == nullptr || ssh_channel_open_session(channel_) != SSH_OK) fail("cannot open a session channel");
  if (ssh_channel_request_exec(channel_, command.c_str()) != SSH_OK) fail("exec request refused");
}

int SshSession::readSome(char* buffer, int size, bool isStderr) {
  const int n = ssh_channel_read_nonblocking(channel_, buffer, static_cast<uint32_t>(size), isStderr ? 1 : 0);
  if (n == SSH_ERROR) return -1;
  if (n == 0 && ssh_channel_is_eof(channel_)) return -1;
  return n;
}

bool SshSession::finished() { return ssh_channel_is_eof(channel_) != 0 || ssh_channel_is_closed(channel_) != 0; }

bool SshSession::write(const std::string& bytes) {
  if (eofSent_ || channel_ == nullptr || ssh_channel_is_open(channel_) == 0) return false;
  return ssh_channel_write(channel_, bytes.data(), static_cast<uint32_t>(bytes.size())) ==
         static_cast<int>(bytes.size());
}

void SshSession::sendEof() {
  if (eofSent_ || channel_ == nullptr) return;
  eofSent_ = true;
  ssh_channel_send_eof(channel_);
}

int SshSession::exitStatus() { return channel_ == nullptr ? -1 : ssh_channel_get_exit_status(channel_); }

int SshSession::fd() const { return ssh_get_fd(session_); }

bool SshSession::broken() {
  return ssh_is_connected(session_) == 0 || (ssh_get_status(session_) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0;
}

std::string SshSession::lastError() {
  const char* text = ssh_get_error(session_);
  return text != nullptr ? text : "";
}

bool SshSession::setUserTimeout(unsigned ms) {
  const int socket = fd();
  return socket >= 0 && ::setsockopt(socket, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) == 0;
}

std::string SshSession::peerAddress() const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (fd() < 0 || ::getpeername(fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr, text, sizeof text);
  } else if (addr.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace dsrun::launcher
