//! A client connection as the server reads and writes it: plain TCP, or TLS over the same
//! socket (feature `rustls`), with what the connection handling needs of either: reads that
//! keep to a deadline even when a client trickles TLS records, a look whether the client hung
//! up, and the address the request is from (the peer, or the client a trusted proxy names).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

/// One accepted connection.
pub(crate) struct Socket {
    tcp: TcpStream,
    #[cfg(feature = "rustls")]
    tls: Option<Box<rustls::ServerConnection>>,
    /// The address the connection comes from.
    pub(crate) peer: SocketAddr,
    /// Whom the request being served is from: the peer, or the client a trusted proxy's
    /// `X-Forwarded-For` names (port 0). Handlers see it as the peer address.
    pub(crate) client: SocketAddr,
    /// When the read under way must end (TLS reads check it between the records a client
    /// may trickle; a plain read returns on any byte, so the caller's check suffices).
    pub(crate) deadline: Option<Instant>,
}

impl Socket {
    /// A plain connection.
    pub(crate) fn plain(tcp: TcpStream, peer: SocketAddr) -> Socket {
        Socket {
            tcp,
            #[cfg(feature = "rustls")]
            tls: None,
            peer,
            client: peer,
            deadline: None,
        }
    }

    /// A TLS connection whose handshake is still to come ([`Socket::handshake`]).
    #[cfg(feature = "rustls")]
    pub(crate) fn tls(tcp: TcpStream, peer: SocketAddr, tls: rustls::ServerConnection) -> Socket {
        Socket {
            tls: Some(Box::new(tls)),
            ..Socket::plain(tcp, peer)
        }
    }

    /// The TCP socket underneath.
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// True when the connection is TLS.
    pub(crate) fn is_tls(&self) -> bool {
        #[cfg(feature = "rustls")]
        return self.tls.is_some();
        #[cfg(not(feature = "rustls"))]
        false
    }

    /// True when request bytes are already decrypted and waiting (no need to wait for the
    /// socket before reading).
    pub(crate) fn has_buffered(&self) -> bool {
        #[cfg(feature = "rustls")]
        if let Some(tls) = &self.tls {
            return !tls.wants_read();
        }
        false
    }

    /// Sets the socket's read timeout to what is left before the deadline; a timeout error
    /// when it has passed.
    fn arm(&self) -> io::Result<()> {
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.tcp.set_read_timeout(Some(left))
    }

    /// Runs the TLS handshake to its end, within `deadline`: a client that stalls in it (or
    /// trickles it) loses the connection then. Nothing to do for a plain connection.
    ///
    /// # Errors
    ///
    /// The I/O error, a timeout past the deadline, or the TLS error (its alert sent first).
    #[cfg(feature = "rustls")]
    pub(crate) fn handshake(&mut self, deadline: Instant) -> io::Result<()> {
        if let Some(tls) = self.tls.as_mut() {
            self.deadline = Some(deadline);
            while tls.is_handshaking() {
                while tls.wants_write() {
                    tls.write_tls(&mut self.tcp)?;
                }
                if !tls.is_handshaking() {
                    break;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                self.tcp.set_read_timeout(Some(left))?;
                if tls.read_tls(&mut self.tcp)? == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                if let Err(error) = tls.process_new_packets() {
                    // The alert that says why, best effort.
                    let _ = tls.write_tls(&mut self.tcp);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, error));
                }
            }
            while tls.wants_write() {
                tls.write_tls(&mut self.tcp)?;
            }
            self.deadline = None;
        }
        Ok(())
    }

    /// True when the client closed its side (or the socket broke). Never blocks.
    pub(crate) fn client_gone(&mut self) -> bool {
        if self.tcp.set_nonblocking(true).is_err() {
            return true;
        }
        let gone = self.look_gone();
        let _ = self.tcp.set_nonblocking(false);
        gone
    }

    fn look_gone(&mut self) -> bool {
        #[cfg(feature = "rustls")]
        if let Some(tls) = self.tls.as_mut() {
            // Bytes waiting may be a `close_notify`: they are taken in (any request bytes among
            // them stay decrypted for the next read) and looked at.
            if !tls.wants_read() {
                return tls
                    .process_new_packets()
                    .map_or(true, |state| state.peer_has_closed());
            }
            return match tls.read_tls(&mut self.tcp) {
                Ok(0) => true,
                Ok(_) => tls
                    .process_new_packets()
                    .map_or(true, |state| state.peer_has_closed()),
                Err(error) => error.kind() != io::ErrorKind::WouldBlock,
            };
        }
        let mut probe = [0u8; 1];
        match self.tcp.peek(&mut probe) {
            Ok(0) => true,
            Ok(_) => false,
            Err(error) => error.kind() != io::ErrorKind::WouldBlock,
        }
    }

    /// Closes both directions (a TLS connection says `close_notify` first, best effort).
    pub(crate) fn shutdown(&mut self) {
        #[cfg(feature = "rustls")]
        if let Some(tls) = self.tls.as_mut() {
            tls.send_close_notify();
            let _ = tls.write_tls(&mut self.tcp);
        }
        let _ = self.tcp.shutdown(std::net::Shutdown::Both);
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(feature = "rustls")]
        if let Some(tls) = self.tls.as_mut() {
            loop {
                match tls.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    // The client closed without `close_notify`: the end of its input.
                    Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(error) => return Err(error),
                }
                // One socket read at a time, each within what is left of the deadline, so
                // records trickled byte by byte cannot hold the read past it.
                let left = self
                    .deadline
                    .map(|deadline| deadline.saturating_duration_since(Instant::now()));
                if left.is_some_and(|left| left.is_zero()) {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                if let Some(left) = left {
                    self.tcp.set_read_timeout(Some(left))?;
                }
                if tls.read_tls(&mut self.tcp)? == 0 {
                    return Ok(0);
                }
                let processed = tls.process_new_packets();
                while tls.wants_write() {
                    tls.write_tls(&mut self.tcp)?;
                }
                if let Err(error) = processed {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, error));
                }
            }
        }
        self.arm()?;
        self.tcp.read(buf)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        #[cfg(feature = "rustls")]
        if let Some(tls) = self.tls.as_mut() {
            let n = tls.writer().write(buf)?;
            while tls.wants_write() {
                tls.write_tls(&mut self.tcp)?;
            }
            return Ok(n);
        }
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        #[cfg(feature = "rustls")]
        if let Some(tls) = self.tls.as_mut() {
            tls.writer().flush()?;
            while tls.wants_write() {
                tls.write_tls(&mut self.tcp)?;
            }
        }
        self.tcp.flush()
    }
}
