#include "tls/tree_signature.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "common/error.h"
#include "tls/certificate_issuer.h"
#include "tls/tls_directory.h"

namespace dsrun::tls {
namespace {

using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, OpensslDeleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpensslDeleter<X509_STORE_CTX, X509_STORE_CTX_free>>;

/// Ed25519 and Ed448 sign the message itself (no separate digest); every other key signs its SHA-256.
const EVP_MD* digestFor(EVP_PKEY* key) {
  const int id = EVP_PKEY_get_base_id(key);
  return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
}

std::string derOf(X509* cert) {
  const int len = i2d_X509(cert, nullptr);
  if (len <= 0) throw Error(strCat("tree signature: cannot encode the launcher certificate: ", opensslError()));
  std::string der(static_cast<size_t>(len), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  return der;
}

bool isLauncherCertificate(X509* cert) {
  const CertUsage usage = certificateUsage(cert);
  return usage.client && !usage.server;
}

}  // namespace

std::string sha256(std::string_view data) {
  std::string out(32, '\0');
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &len, EVP_sha256(),
                 nullptr) != 1 ||
      len != out.size()) {
    throw Error(strCat("sha256: ", opensslError()));
  }
  return out;
}

TreeSigner::TreeSigner(const std::string& dir, const std::string& flag) {
  const TlsFiles files = tlsFiles(dir);
  const std::string context = strCat(flag, " '", dir, "'");
  certificate_ = readCertificate(files.cert, context);
  key_ = readPrivateKey(files.key, context);
  if (!isLauncherCertificate(certificate_.get())) {
    throw ConfigError(strCat(context, ": ", files.cert, " is not a launcher certificate, so it may not sign a tree "
                             "launch\n  hint: pass the directory 'dsrun --make_tls' made"));
  }
  if (X509_check_private_key(certificate_.get(), key_.get()) != 1) {
    ERR_clear_error();
    throw ConfigError(strCat(context, ": ", files.key, " does not match ", files.cert));
  }
  certificateDer_ = derOf(certificate_.get());
}

TreeSigner::TreeSigner(X509Ptr certificate, PKeyPtr key)
    : certificate_(std::move(certificate)), key_(std::move(key)), certificateDer_(derOf(certificate_.get())) {}

std::string TreeSigner::sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, digestFor(key_.get()), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, data, message.size()) != 1) {
    throw Error(strCat("tree signature: cannot sign: ", opensslError()));
  }
  std::string signature(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &len, data, message.size()) != 1) {
    throw Error(strCat("tree signature: cannot sign: ", opensslError()));
  }
  signature.resize(len);  // DER ECDSA signatures vary in length; the first call gave the maximum
  return signature;
}

std::string verifyTreeSignature(X509_STORE* trust, std::string_view certificateDer, std::string_view message,
                                std::string_view signature) {
  const auto* in = reinterpret_cast<const unsigned char*>(certificateDer.data());
  X509Ptr cert(d2i_X509(nullptr, &in, static_cast<long>(certificateDer.size())));
  if (!cert || in != reinterpret_cast<const unsigned char*>(certificateDer.data()) + certificateDer.size()) {
    ERR_clear_error();
    return "the launcher certificate does not parse (DER)";
  }
  // The role first: a node certificate says so plainly, instead of as OpenSSL's "unsuitable purpose".
  if (!isLauncherCertificate(cert.get())) {
    return strCat("the signing certificate (", describeCertificate(cert.get()), ") is not a launcher's");
  }
  StoreCtxPtr verify(X509_STORE_CTX_new());
  if (!verify || X509_STORE_CTX_init(verify.get(), trust, cert.get(), nullptr) != 1) {
    return strCat("cannot check the launcher certificate: ", opensslError());
  }
  X509_STORE_CTX_set_purpose(verify.get(), X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(verify.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(verify.get());
    ERR_clear_error();
    return strCat("the launcher certificate (", describeCertificate(cert.get()), ") is not trusted: ",
                  X509_verify_cert_error_string(err));
  }
  MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  if (!ctx || key == nullptr || EVP_DigestVerifyInit(ctx.get(), nullptr, digestFor(key), nullptr, key) != 1) {
    return strCat("cannot check the signature: ", opensslError());
  }
  const int ok = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                                  reinterpret_cast<const unsigned char*>(message.data()), message.size());
  if (ok != 1) {
    ERR_clear_error();
    return strCat("the signature by ", describeCertificate(cert.get()), " does not match the launch");
  }
  return {};
}

bool certificateNames(X509* certificate, const std::string& host) {
  const unsigned int flags = X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_WILDCARDS;
  const int ok = isIpAddress(host) ? X509_check_ip_asc(certificate, host.c_str(), flags)
                                   : X509_check_host(certificate, host.c_str(), host.size(), flags, nullptr);
  return ok == 1;
}

}  // namespace dsrun::tls
