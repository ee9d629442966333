//! TLS for the HTTP server (features `server` and `rustls`): the certificate chain and private
//! key it presents, read from PEM and checked once, before anything listens.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

/// The largest certificate or key file read, in bytes (a chain of a few certificates is a few
/// KiB).
const MAX_PEM_BYTES: u64 = 1024 * 1024;

/// The identity an [`super::HttpServer`] presents over TLS: a certificate chain and its private
/// key, checked when made (the key must match the first certificate). TLS 1.3 and 1.2 with
/// rustls's safe defaults (the `ring` provider); no client certificates; HTTP/1.1 (ALPN
/// `http/1.1`). Give it to [`super::HttpServerConfig::tls`].
#[derive(Clone)]
pub struct ServerTls {
    pub(crate) config: Arc<rustls::ServerConfig>,
    certificates: usize,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("certificates", &self.certificates)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// From PEM files: `cert` holds the certificate chain (the server's certificate first,
    /// then any intermediates), `key` its private key (PKCS#8, PKCS#1 or SEC1). Each file may
    /// be at most 1 MiB.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the file that cannot be read, holds no certificate or no
    /// private key, or whose key does not match the certificate.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerTls> {
        let cert_pem = read_bounded(cert, "certificate")?;
        let key_pem = read_bounded(key, "private key")?;
        ServerTls::build(
            &cert_pem,
            &key_pem,
            &cert.display().to_string(),
            &key.display().to_string(),
        )
    }

    /// From PEM text, as [`ServerTls::from_pem_files`] reads it.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when there is no certificate or no private key, or the key does not
    /// match the certificate.
    pub fn from_pem(cert: &[u8], key: &[u8]) -> Result<ServerTls> {
        ServerTls::build(cert, key, "the certificate PEM", "the key PEM")
    }

    fn build(
        cert_pem: &[u8],
        key_pem: &[u8],
        cert_name: &str,
        key_name: &str,
    ) -> Result<ServerTls> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<std::result::Result<_, _>>()
            .map_err(|error| {
                Error::Config(format!("{cert_name}: not a PEM certificate chain: {error}"))
            })?;
        if chain.is_empty() {
            return Err(Error::Config(format!(
                "{cert_name}: no certificate (-----BEGIN CERTIFICATE-----) in it"
            )));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|error| {
            Error::Config(format!(
                "{key_name}: no PEM private key (PKCS#8, PKCS#1 or SEC1) in it: {error}"
            ))
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| Error::Config(format!("TLS: {error}")))?
            .with_no_client_auth()
            .with_single_cert(chain.clone(), key)
            .map_err(|error| {
                Error::Config(format!(
                    "{key_name} does not go with {cert_name}, or cannot be used: {error}"
                ))
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            config: Arc::new(config),
            certificates: chain.len(),
        })
    }

    /// A server side of a new connection.
    pub(crate) fn accept(&self) -> std::io::Result<rustls::ServerConnection> {
        rustls::ServerConnection::new(Arc::clone(&self.config))
            .map_err(|error| std::io::Error::other(error.to_string()))
    }
}

/// A file's bytes, at most [`MAX_PEM_BYTES`].
fn read_bounded(path: &Path, what: &str) -> Result<Vec<u8>> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|error| Error::Config(format!("cannot read the {what} file {shown}: {error}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| Error::Config(format!("cannot read the {what} file {shown}: {error}")))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(Error::Config(format!(
            "the {what} file {shown} is larger than 1 MiB"
        )));
    }
    Ok(bytes)
}
