// The launcher signs a tree launch once; a node accepts the signature only from a launcher certificate of its
// own cluster CA that is not revoked, and only over exactly the bytes signed.
#include "tls/tree_signature.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/common/temp_dir.h"
#include "tests/tls/test_pki.h"
#include "tls/ssl_context.h"
#include "tls/tls_directory.h"

using Catch::Matchers::Contains;
using namespace dsrun::tls;

namespace {

using StorePtr = std::unique_ptr<X509_STORE, OpensslDeleter<X509_STORE, X509_STORE_free>>;

StorePtr trustOf(const std::string& dir) { return StorePtr(makeTrustStore(dir, "--tls_dir")); }

}  // namespace

TEST_CASE("sha256 gives the standard digest") {
  // FIPS 180-2 test vector "abc".
  const std::string d = sha256("abc");
  REQUIRE(d.size() == 32);
  CHECK(static_cast<unsigned char>(d[0]) == 0xba);
  CHECK(static_cast<unsigned char>(d[31]) == 0xad);
  CHECK(sha256("abd") != d);
}

TEST_CASE("a node verifies the launcher's signature over exactly the signed bytes") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string node = pki.node("n1");
  const TreeSigner signer(pki.launcher());
  const std::string signature = signer.sign("root bytes");
  StorePtr trust = trustOf(node);
  CHECK(verifyTreeSignature(trust.get(), signer.certificateDer(), "root bytes", signature).empty());
  CHECK_THAT(verifyTreeSignature(trust.get(), signer.certificateDer(), "root byteS", signature),
             Contains("does not match the launch"));
  std::string flipped = signature;
  flipped[flipped.size() / 2] ^= 0x01;
  CHECK_THAT(verifyTreeSignature(trust.get(), signer.certificateDer(), "root bytes", flipped),
             Contains("does not match the launch"));
  CHECK_THAT(verifyTreeSignature(trust.get(), "not a certificate", "root bytes", signature), Contains("does not parse"));
}

TEST_CASE("a node key cannot sign a tree launch") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string node = pki.node("n1");
  CHECK_THROWS_WITH(TreeSigner(node), Contains("is not a launcher certificate"));
  // Even a signature made with a node key directly is refused: the certificate is not a launcher's.
  const TlsFiles files = tlsFiles(node);
  const TreeSigner nodeSigner(readCertificate(files.cert, "test"), readPrivateKey(files.key, "test"));
  StorePtr trust = trustOf(pki.node("n2"));
  CHECK_THAT(verifyTreeSignature(trust.get(), nodeSigner.certificateDer(), "m", nodeSigner.sign("m")),
             Contains("is not a launcher's"));
}

TEST_CASE("a launcher of another cluster, or a revoked launcher certificate, is not trusted") {
  TempDir tmp;
  testing::TestPki pki(tmp.path() + "/a");
  testing::TestPki other(tmp.path() + "/b");
  StorePtr trust = trustOf(pki.node("n1"));
  const TreeSigner stranger(other.launcher());
  CHECK_THAT(verifyTreeSignature(trust.get(), stranger.certificateDer(), "m", stranger.sign("m")),
             Contains("is not trusted"));

  const TreeSigner old(pki.launcher());
  renewLauncherCertificate(pki.launcher());  // revokes the old certificate in the CA's crl.pem
  StorePtr withCrl = trustOf(pki.launcher());
  CHECK_THAT(verifyTreeSignature(withCrl.get(), old.certificateDer(), "m", old.sign("m")), Contains("revoked"));
  const TreeSigner renewed(pki.launcher());
  CHECK(verifyTreeSignature(withCrl.get(), renewed.certificateDer(), "m", renewed.sign("m")).empty());
}

TEST_CASE("certificateNames reads the subjectAltName only") {
  TempDir tmp;
  testing::TestPki pki(tmp.path());
  const std::string node = pki.node("n1", {"10.0.0.7"});
  X509Ptr cert = readCertificate(tlsFiles(node).cert, "test");
  CHECK(certificateNames(cert.get(), "n1"));
  CHECK(certificateNames(cert.get(), "10.0.0.7"));
  CHECK_FALSE(certificateNames(cert.get(), "n2"));
  CHECK_FALSE(certificateNames(cert.get(), "10.0.0.8"));
  CHECK_FALSE(certificateNames(cert.get(), "dsrun node n1"));  // the CN is not a name
}
