//! What makes a join port the command's own: a key pair and self-signed certificate
//! made for this command, which every agent pins by its SHA-256 fingerprint (no
//! certificate authority, no host name check: the fingerprint in the join address is
//! the trust), and a random token each agent proves inside the encrypted connection.
//! TLS 1.3 only, with rustls' ring provider.

use std::sync::Arc;

use rand::RngCore;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};
use sha2::{Digest, Sha256};

use crate::error::FleetError;

/// The name the certificate carries and the agent asks for (never resolved: the
/// fingerprint decides).
pub const SERVER_NAME: &str = "iofleet-controller";

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The command's own credentials.
pub struct Credentials {
    cert: CertificateDer<'static>,
    key: PrivatePkcs8KeyDer<'static>,
    /// SHA-256 of the certificate (DER), lower-case hex: what agents pin.
    pub fingerprint: String,
    /// 32 random bytes, hex: what agents prove.
    pub token: String,
}

impl Credentials {
    /// A fresh key pair, certificate and token.
    pub fn generate() -> Result<Self, FleetError> {
        let made = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| FleetError::Setup(format!("cannot make the join certificate: {e}")))?;
        let cert = made.cert.der().clone();
        let key = PrivatePkcs8KeyDer::from(made.key_pair.serialize_der());
        let mut token = [0u8; 32];
        rand::rng().fill_bytes(&mut token);
        Ok(Credentials {
            fingerprint: hex(&Sha256::digest(&cert)),
            cert,
            key,
            token: hex(&token),
        })
    }

    /// The join port's TLS configuration: TLS 1.3, this certificate, no client
    /// certificates (agents prove the token instead).
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, FleetError> {
        let config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .and_then(|b| {
                b.with_no_client_auth().with_single_cert(
                    vec![self.cert.clone()],
                    PrivateKeyDer::Pkcs8(self.key.clone_key()),
                )
            })
            .map_err(|e| FleetError::Setup(format!("cannot set up TLS for the join port: {e}")))?;
        Ok(Arc::new(config))
    }

    /// Whether `token` is this command's (compared in constant time).
    pub fn token_matches(&self, token: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// An agent's TLS configuration: TLS 1.3, trusting exactly the certificate whose
/// SHA-256 is `fingerprint` (hex).
pub fn client_config(fingerprint: &str) -> Result<Arc<ClientConfig>, String> {
    let pinned = parse_fingerprint(fingerprint)?;
    let provider = provider();
    let verifier = Pinned {
        fingerprint: pinned,
        provider: provider.clone(),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("cannot set up TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name an agent asks the controller for.
pub fn server_name() -> ServerName<'static> {
    ServerName::try_from(SERVER_NAME).expect("a valid DNS name")
}

/// A SHA-256 fingerprint in hex (64 digits, either case).
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32], String> {
    let bad = || format!("not a SHA-256 fingerprint (64 hex digits): {s:?}");
    if s.len() != 64 || !s.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// Trusts one certificate, by its fingerprint; the handshake's signatures are checked
/// as usual, so only the holder of its key can pass.
#[derive(Debug)]
struct Pinned {
    fingerprint: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let got: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if got == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the controller's certificate has fingerprint {}, not the {} of the join address (a port of another command?)",
                hex(&got),
                hex(&self.fingerprint)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_compared_whole() {
        let c = Credentials::generate().unwrap();
        assert!(c.token_matches(&c.token.clone()));
        assert!(!c.token_matches(&c.token[..63]));
        let mut other = c.token.clone().into_bytes();
        other[10] = if other[10] == b'0' { b'1' } else { b'0' };
        assert!(!c.token_matches(std::str::from_utf8(&other).unwrap()));
        assert_eq!(c.token.len(), 64);
        assert_ne!(Credentials::generate().unwrap().token, c.token);
    }

    #[test]
    fn a_fingerprint_is_64_hex_digits() {
        let c = Credentials::generate().unwrap();
        assert_eq!(parse_fingerprint(&c.fingerprint).unwrap().len(), 32);
        assert_eq!(
            hex(&parse_fingerprint(&c.fingerprint.to_uppercase()).unwrap()),
            c.fingerprint
        );
        for bad in ["", "ab", &"g".repeat(64), &"é".repeat(32)] {
            assert!(parse_fingerprint(bad).is_err(), "{bad:?}");
        }
    }
}
