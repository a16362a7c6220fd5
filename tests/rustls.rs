//! `fkrng::RustlsRandom` as the random source of a rustls `CryptoProvider` (feature
//! `rustls`): a TLS 1.3 handshake between an in-memory client and server, then application
//! data both ways.
#![cfg(feature = "rustls")]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustls::crypto::{CryptoProvider, GetRandomFailed, SecureRandom, ring};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{
    ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection,
};

/// Wraps `fkrng::RustlsRandom`, counts the calls and bytes rustls asks of it and keeps the
/// 32-byte fills (client and server randoms, session IDs).
#[derive(Debug)]
struct Counting {
    calls: AtomicUsize,
    bytes: AtomicUsize,
    fills_32: Mutex<Vec<[u8; 32]>>,
}

impl Counting {
    const fn new() -> Self {
        Counting {
            calls: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            fills_32: Mutex::new(Vec::new()),
        }
    }
}

impl SecureRandom for Counting {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(buf.len(), Ordering::Relaxed);
        fkrng::RustlsRandom.fill(buf)?;
        if let Ok(fill) = <[u8; 32]>::try_from(&*buf) {
            self.fills_32.lock().expect("not poisoned").push(fill);
        }
        Ok(())
    }
}

/// A source that always fails, to show that the provider's source is the one consulted.
#[derive(Debug)]
struct Broken;

impl SecureRandom for Broken {
    fn fill(&self, _: &mut [u8]) -> Result<(), GetRandomFailed> {
        Err(GetRandomFailed)
    }
}

fn provider(secure_random: &'static dyn SecureRandom) -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        secure_random,
        ..ring::default_provider()
    })
}

/// A self-signed certificate for `localhost` and its PKCS#8 key, made at test time.
fn certificate() -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("rcgen");
    let key = PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der());
    (ck.cert.der().clone(), key.into())
}

fn connections(
    secure_random: &'static dyn SecureRandom,
) -> Result<(Connection, Connection), rustls::Error> {
    let (cert, key) = certificate();
    let server_config = ServerConfig::builder_with_provider(provider(secure_random))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)?;
    let mut roots = RootCertStore::empty();
    roots.add(cert)?;
    let client_config = ClientConfig::builder_with_provider(provider(secure_random))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").expect("valid name");
    let client = ClientConnection::new(Arc::new(client_config), name)?;
    let server = ServerConnection::new(Arc::new(server_config))?;
    Ok((client.into(), server.into()))
}

/// Moves every pending TLS record from `from` to `to` through an in-memory buffer and lets
/// `to` process them. Returns the bytes moved.
fn pump(from: &mut Connection, to: &mut Connection) -> Result<Vec<u8>, rustls::Error> {
    let mut wire = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut wire).expect("write to a Vec");
    }
    let mut rd = wire.as_slice();
    while !rd.is_empty() {
        to.read_tls(&mut rd).expect("read from a slice");
        to.process_new_packets()?;
    }
    Ok(wire)
}

/// The bytes of each flight of a handshake, client and server alternating.
fn handshake(
    client: &mut Connection,
    server: &mut Connection,
) -> Result<Vec<Vec<u8>>, rustls::Error> {
    let mut flights = Vec::new();
    while client.is_handshaking() || server.is_handshaking() {
        assert!(flights.len() < 20, "handshake did not finish in 10 rounds");
        flights.push(pump(client, server)?);
        flights.push(pump(server, client)?);
    }
    Ok(flights)
}

/// The 32-byte random of the ClientHello or ServerHello that opens `flight`: after the
/// record header (5 bytes), the handshake header (4) and the legacy version (2).
fn hello_random(flight: &[u8]) -> [u8; 32] {
    assert_eq!(flight[0], 22, "a handshake record");
    flight[11..43].try_into().expect("32 bytes")
}

fn read_all(conn: &mut Connection) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match conn.reader().read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("read: {e}"),
        }
    }
    out
}

#[test]
fn handshake_and_data_with_fkrng_as_secure_random() {
    static SOURCE: Counting = Counting::new();
    let (mut client, mut server) = connections(&SOURCE).expect("configs");
    let flights = handshake(&mut client, &mut server).expect("handshake");
    let calls = SOURCE.calls.load(Ordering::Relaxed);
    let bytes = SOURCE.bytes.load(Ordering::Relaxed);
    eprintln!(
        "handshake: {} flights, {calls} SecureRandom calls, {bytes} bytes",
        flights.len()
    );
    // At least the client random, the client's legacy session ID and the server random,
    // 32 bytes each.
    assert!(calls >= 3, "{calls} calls");
    assert!(bytes >= 96, "{bytes} bytes");
    // The randoms on the wire are bytes that fkrng handed to rustls.
    let fills = SOURCE.fills_32.lock().expect("not poisoned").clone();
    let client_random = hello_random(&flights[0]);
    let server_random = hello_random(&flights[1]);
    assert!(
        fills.contains(&client_random),
        "ClientHello.random not from fkrng"
    );
    assert!(
        fills.contains(&server_random),
        "ServerHello.random not from fkrng"
    );
    assert_ne!(client_random, server_random);
    assert_eq!(
        client.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );

    client.writer().write_all(b"ping").expect("client write");
    pump(&mut client, &mut server).expect("to server");
    assert_eq!(read_all(&mut server), b"ping");
    server.writer().write_all(b"pong").expect("server write");
    pump(&mut server, &mut client).expect("to client");
    assert_eq!(read_all(&mut client), b"pong");
}

#[test]
fn a_failing_source_stops_the_handshake() {
    static BROKEN: Broken = Broken;
    let failed = match connections(&BROKEN) {
        Err(_) => true,
        Ok((mut client, mut server)) => handshake(&mut client, &mut server).is_err(),
    };
    assert!(
        failed,
        "rustls completed a handshake without its random source"
    );
}

#[test]
fn fills_are_distinct_and_not_fips() {
    let mut seen = HashSet::new();
    for _ in 0..10_000 {
        let mut random = [0u8; 32];
        fkrng::RustlsRandom.fill(&mut random).expect("seeded");
        assert!(seen.insert(random));
    }
    assert!(!fkrng::RustlsRandom.fips());
}
