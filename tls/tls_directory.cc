#include "tls/tls_directory.h"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace dsrun::tls {
namespace {

constexpr long kValiditySeconds = 10L * 365 * 24 * 3600;

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

/// The last OpenSSL error as text (and clears the queue).
std::string opensslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

[[noreturn]] void fail(const std::string& doing) {
  throw Error(strCat("make TLS directory: ", doing, ": ", opensslError()));
}

PKeyPtr makeKey() {
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) fail("generate EC P-256 key");
  return key;
}

void addExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) fail(strCat("build extension ", OBJ_nid2sn(nid), "=", value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (!ok) fail(strCat("add extension ", OBJ_nid2sn(nid)));
}

/// A certificate for `key` named `commonName`, signed by `issuerKey` (self-signed when issuer is null).
X509Ptr makeCertificate(EVP_PKEY* key, const std::string& commonName, X509* issuer, EVP_PKEY* issuerKey,
                        bool isCa) {
  X509Ptr cert(X509_new());
  if (!cert || !X509_set_version(cert.get(), 2)) fail("create certificate");
  // A random 127-bit serial: unique without any state kept between runs.
  unsigned char serialBytes[16];
  if (RAND_bytes(serialBytes, sizeof serialBytes) != 1) fail("random serial");
  serialBytes[0] &= 0x7f;
  BIGNUM* serial = BN_bin2bn(serialBytes, sizeof serialBytes, nullptr);
  if (serial == nullptr || BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get())) == nullptr) {
    BN_free(serial);
    fail("set serial");
  }
  BN_free(serial);
  // Backdated an hour so nodes with slightly late clocks accept it at once.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValiditySeconds);
  if (!X509_set_pubkey(cert.get(), key)) fail("set public key");
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("dsrun"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (!X509_set_issuer_name(cert.get(), X509_get_subject_name(signer))) fail("set issuer");
  if (isCa) {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
    addExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    addExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyAgreement");
    addExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  addExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (!isCa) addExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(cert.get(), issuerKey != nullptr ? issuerKey : key, EVP_sha256())) fail("sign certificate");
  return cert;
}

std::string pemOf(X509* cert, EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio) fail("allocate buffer");
  const int ok = cert != nullptr ? PEM_write_bio_X509(bio.get(), cert)
                                 : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  if (!ok) fail("encode PEM");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

/// Writes a new file (never replacing one) with exactly `mode`.
void writeNewFile(const std::string& path, const std::string& content, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw IoError("", "open", errno, strCat("creating ", path));
  ::fchmod(fd, mode);  // open()'s mode is filtered by the umask
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError("", "write", err, strCat("writing ", path));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw IoError("", "close", errno, strCat("writing ", path));
}

void makeDirectories(const std::string& dir) {
  std::string path;
  for (const auto& part : split(dir, '/')) {
    path += part;
    if (!path.empty() && ::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      throw IoError("", "mkdir", errno, strCat("creating TLS directory ", path));
    }
    path += "/";
  }
}

}  // namespace

TlsFiles tlsFiles(const std::string& dir) {
  const std::string base = endsWith(dir, "/") ? dir : dir + "/";
  return TlsFiles{base + "ca.pem", base + "ca.key", base + "cert.pem", base + "key.pem"};
}

void makeTlsDirectory(const std::string& dir) {
  if (dir.empty()) throw ConfigError("--make_tls: the directory name is empty");
  const TlsFiles files = tlsFiles(dir);
  for (const auto& path : {files.caCert, files.caKey, files.cert, files.key}) {
    if (::access(path.c_str(), F_OK) == 0) {
      throw ConfigError(strCat("--make_tls '", dir, "': ", path,
                               " already exists (refusing to overwrite TLS material)\n  hint: choose a new "
                               "directory, or delete the old one if no node uses it any more"));
    }
  }
  makeDirectories(dir);
  PKeyPtr caKey = makeKey();
  X509Ptr ca = makeCertificate(caKey.get(), "dsrun cluster CA", nullptr, nullptr, true);
  PKeyPtr nodeKey = makeKey();
  X509Ptr node = makeCertificate(nodeKey.get(), "dsrun node", ca.get(), caKey.get(), false);
  // Keys first, so a crash in between never leaves a certificate without its key.
  writeNewFile(files.caKey, pemOf(nullptr, caKey.get()), 0600);
  writeNewFile(files.key, pemOf(nullptr, nodeKey.get()), 0600);
  writeNewFile(files.caCert, pemOf(ca.get(), nullptr), 0644);
  writeNewFile(files.cert, pemOf(node.get(), nullptr), 0644);
}

void checkTlsDirectory(const std::string& dir, const std::string& flag) {
  const TlsFiles files = tlsFiles(dir);
  for (const auto& path : {files.caCert, files.cert, files.key}) {
    if (::access(path.c_str(), R_OK) != 0) {
      throw ConfigError(strCat(flag, " '", dir, "': cannot read ", path, ": ", std::strerror(errno),
                               "\n  hint: create the directory with 'dsrun --make_tls ", dir,
                               "' and copy it to every node"));
    }
  }
  struct stat st {};
  if (::stat(files.key.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw ConfigError(strCat(flag, " '", dir, "': private key ", files.key,
                             " is accessible by group or others, got mode '", mode, "'\n  hint: chmod 600 ",
                             files.key));
  }
}

}  // namespace dsrun::tls
