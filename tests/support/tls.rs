//! TLS for the server tests: a self-signed certificate made at run time (rcgen, on the ring
//! provider rustls already builds: no files in the tree, no `openssl` binary needed), a raw
//! rustls client for the handshake tests, and TCP connections from a chosen loopback source
//! address (to be a peer other than 127.0.0.1).

use std::io::{BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::Arc;

use super::server::{read_response, RawResponse};
use super::LONG;

/// A self-signed certificate for `localhost` and `127.0.0.1`: `(certificate PEM, key PEM)`.
pub fn self_signed() -> (String, String) {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let made = rcgen::generate_simple_self_signed(names).expect("a self-signed certificate");
    (made.cert.pem(), made.signing_key.serialize_pem())
}

/// The server's identity from [`self_signed`]'s PEM.
pub fn server_tls(cert: &str, key: &str) -> toolwire::server::ServerTls {
    toolwire::server::ServerTls::from_pem(cert.as_bytes(), key.as_bytes()).expect("server TLS")
}

/// A rustls client config that trusts `cert` only.
pub fn client_config(cert: &str) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes()) {
        roots.add(der.expect("PEM")).expect("a root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The bytes a fresh client sends first: its whole ClientHello.
pub fn client_hello(cert: &str) -> Vec<u8> {
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let mut client = rustls::ClientConnection::new(client_config(cert), name).expect("client");
    let mut hello = Vec::new();
    while client.wants_write() {
        client.write_tls(&mut hello).expect("write to a Vec");
    }
    hello
}

/// One raw HTTP/1.1 exchange over TLS to `addr`, trusting `cert`: `head` (without its final
/// CRLF) and `body`, the answer read.
pub fn exchange(addr: SocketAddr, cert: &str, head: &str, body: &str) -> RawResponse {
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(LONG)).expect("timeout");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
    let client = rustls::ClientConnection::new(client_config(cert), name).expect("client");
    let mut stream = rustls::StreamOwned::new(client, tcp);
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).expect("send");
    read_response(&mut BufReader::new(stream))
}

/// A TCP connection to `to` from the loopback address `from` (e.g. 127.0.0.2), so the server
/// sees a peer other than 127.0.0.1.
pub fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let (IpAddr::V4(from), SocketAddr::V4(to)) = (from, to) else {
        panic!("IPv4 only");
    };
    let sockaddr = |ip: std::net::Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket is bound and connected with addresses of the right size, and
    // owned by the TcpStream from then on (closed on drop); on failure it is closed here.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let local = sockaddr(from, 0);
        let remote = sockaddr(*to.ip(), to.port());
        if libc::bind(fd, std::ptr::addr_of!(local).cast(), size) != 0
            || libc::connect(fd, std::ptr::addr_of!(remote).cast(), size) != 0
        {
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            panic!("connecting from {from} to {to}: {error}");
        }
        TcpStream::from_raw_fd(fd)
    }
}

/// A raw HTTP/1.1 exchange from the loopback address `from`, in plain HTTP.
pub fn exchange_from(from: IpAddr, to: SocketAddr, head: &str, body: &str) -> RawResponse {
    let stream = connect_from(from, to);
    stream.set_read_timeout(Some(LONG)).expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    writer.write_all(request.as_bytes()).expect("send");
    read_response(&mut BufReader::new(stream))
}
