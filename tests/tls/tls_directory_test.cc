#include "tls/tls_directory.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "common/error.h"
#include "tests/common/temp_dir.h"

using Catch::Matchers::Contains;
using namespace dsrun::tls;

namespace {

mode_t modeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

X509* readCert(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  REQUIRE(f != nullptr);
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  REQUIRE(cert != nullptr);
  return cert;
}

/// OpenSSL's verdict on `leaf` with `ca` as the only trust anchor.
int verify(X509* leaf, X509* ca) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
  const int ok = X509_verify_cert(ctx);
  const int err = X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok == 1 ? X509_V_OK : err;
}

}  // namespace

TEST_CASE("tlsFiles names the four files of a TLS directory", "[tls]") {
  TlsFiles f = tlsFiles("/etc/dsrun/tls/");
  CHECK(f.caCert == "/etc/dsrun/tls/ca.pem");
  CHECK(f.caKey == "/etc/dsrun/tls/ca.key");
  CHECK(f.cert == "/etc/dsrun/tls/cert.pem");
  CHECK(f.key == "/etc/dsrun/tls/key.pem");
}

TEST_CASE("makeTlsDirectory creates a CA and a node certificate that chains to it", "[tls]") {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/b/tls";
  makeTlsDirectory(dir);
  TlsFiles f = tlsFiles(dir);
  CHECK(modeOf(f.key) == 0600);
  CHECK(modeOf(f.caKey) == 0600);
  CHECK(modeOf(dir) == 0700);
  X509* ca = readCert(f.caCert);
  X509* node = readCert(f.cert);
  CHECK(verify(node, ca) == X509_V_OK);
  CHECK(X509_check_ca(ca) != 0);
  CHECK(X509_check_ca(node) == 0);
  X509_free(ca);
  X509_free(node);
  CHECK_NOTHROW(checkTlsDirectory(dir, "--tls_dir"));
}

TEST_CASE("a node certificate does not chain to another directory's CA", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path() + "/one");
  makeTlsDirectory(tmp.path() + "/two");
  X509* caTwo = readCert(tlsFiles(tmp.path() + "/two").caCert);
  X509* nodeOne = readCert(tlsFiles(tmp.path() + "/one").cert);
  CHECK(verify(nodeOne, caTwo) != X509_V_OK);
  X509_free(caTwo);
  X509_free(nodeOne);
}

TEST_CASE("makeTlsDirectory refuses to overwrite existing key material", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path());
  REQUIRE_THROWS_WITH(makeTlsDirectory(tmp.path()), Contains("ca.pem already exists"));
}

TEST_CASE("checkTlsDirectory names a missing file and says how to create the directory", "[tls]") {
  TempDir tmp;
  REQUIRE_THROWS_WITH(checkTlsDirectory(tmp.path(), "--tls_dir"),
                      Contains("--tls_dir '" + tmp.path() + "': cannot read " + tmp.path() + "/ca.pem") &&
                          Contains("hint: create the directory with 'dsrun --make_tls"));
}

TEST_CASE("checkTlsDirectory refuses a private key readable by others", "[tls]") {
  TempDir tmp;
  makeTlsDirectory(tmp.path());
  ::chmod(tlsFiles(tmp.path()).key.c_str(), 0644);
  REQUIRE_THROWS_WITH(checkTlsDirectory(tmp.path(), "--tls_dir"),
                      Contains("is accessible by group or others, got mode '0644'") && Contains("chmod 600"));
}
