//! Reading one HTTP/1.1 request from a client that is not trusted: the head through httparse
//! within a byte cap and a deadline, then the body by `Content-Length` or chunked framing
//! within a byte cap and its own deadline. Every refusal says which status it deserves.
//!
//! The reading is written against `Read` and a `before_read` hook (which sets the socket's
//! timeout to what is left of the deadline), so the same code runs over a socket and, in the
//! fuzz target, over bytes in memory.

use std::io::{self, Read};

/// Why a request could not be read, and what the client is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The connection ended (or was idle to its limit) before a request began: nothing to
    /// answer.
    Idle,
    /// The head or body did not arrive before its deadline: 408, then the connection closes.
    TimedOut,
    /// A status and a reason: 400, 411, 413, 431, 501, 505.
    Refused(u16, String),
    /// The connection broke.
    Broken(String),
}

impl ReadError {
    fn bad(reason: impl Into<String>) -> ReadError {
        ReadError::Refused(400, reason.into())
    }
}

/// The limits of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_head_bytes: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body_bytes: usize,
}

/// A request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    /// `1` for HTTP/1.1, `0` for HTTP/1.0.
    pub(crate) minor: u8,
    /// Names in lower case, values as sent (visible ASCII; others are refused), in order.
    pub(crate) headers: Vec<(String, String)>,
}

impl Head {
    /// The value of the one header named `name` (lower case); `None` when absent.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every value of `name`, in order.
    pub(crate) fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(known, _)| known == name)
            .map(|(_, value)| value.as_str())
    }

    /// Whether the client asked to keep the connection open after this request.
    pub(crate) fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match connection.as_deref() {
            Some(value) if value.split(',').any(|token| token.trim() == "close") => false,
            Some(value) if value.split(',').any(|token| token.trim() == "keep-alive") => true,
            _ => self.minor >= 1,
        }
    }
}

/// How the body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(usize),
    Chunked,
}

/// Bytes read from the connection and not used yet (a pipelined request's start).
#[derive(Debug, Default)]
pub(crate) struct Buffer {
    data: Vec<u8>,
}

/// How much is read at once.
const READ_CHUNK: usize = 16 * 1024;

impl Buffer {
    /// Reads more, at most `READ_CHUNK` bytes; `Ok(0)` at the end of the input.
    fn fill<R: Read>(
        &mut self,
        reader: &mut R,
        before_read: &mut dyn FnMut() -> Result<(), ReadError>,
    ) -> Result<usize, ReadError> {
        before_read()?;
        let start = self.data.len();
        self.data.resize(start + READ_CHUNK, 0);
        loop {
            match reader.read(&mut self.data[start..]) {
                Ok(n) => {
                    self.data.truncate(start + n);
                    return Ok(n);
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.data.truncate(start);
                    return Err(ReadError::TimedOut);
                }
                Err(error) => {
                    self.data.truncate(start);
                    return Err(ReadError::Broken(error.to_string()));
                }
            }
        }
    }

    fn consume(&mut self, used: usize) {
        self.data.drain(..used);
    }

    /// True when nothing is buffered.
    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Parses a complete head from `bytes`: `Ok(None)` when more bytes are needed.
///
/// Only the first `max_head_bytes` are looked at, so the verdict is the same however the
/// bytes arrived (in one read or one at a time): a head that is not complete within them is
/// 431, whatever comes after.
pub(crate) fn parse_head(
    bytes: &[u8],
    limits: &Limits,
) -> Result<Option<(Head, usize)>, ReadError> {
    let window = &bytes[..bytes.len().min(limits.max_head_bytes)];
    let mut storage = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut request = httparse::Request::new(&mut storage);
    let used = match request.parse(window) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => {
            if bytes.len() >= limits.max_head_bytes {
                return Err(ReadError::Refused(
                    431,
                    format!("the request head is over {} bytes", limits.max_head_bytes),
                ));
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::Refused(
                431,
                format!("the request has more than {} headers", limits.max_headers),
            ))
        }
        Err(httparse::Error::Version) => {
            return Err(ReadError::Refused(
                505,
                "only HTTP/1.0 and 1.1 are served".into(),
            ))
        }
        Err(error) => return Err(ReadError::bad(format!("a malformed request head: {error}"))),
    };
    if used > limits.max_head_bytes {
        return Err(ReadError::Refused(
            431,
            format!("the request head is over {} bytes", limits.max_head_bytes),
        ));
    }
    let method = request.method.unwrap_or_default().to_owned();
    let target = request.path.unwrap_or_default().to_owned();
    let minor = request.version.unwrap_or(1);
    let mut headers = Vec::with_capacity(request.headers.len());
    for header in request.headers.iter() {
        let value = std::str::from_utf8(header.value)
            .ok()
            .filter(|value| {
                value
                    .bytes()
                    .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            })
            .ok_or_else(|| {
                ReadError::bad(format!("the header {:?} is not visible ASCII", header.name))
            })?;
        headers.push((header.name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    Ok(Some((
        Head {
            method,
            target,
            minor,
            headers,
        },
        used,
    )))
}

/// The body's framing, refusing the ambiguous ones (both `Content-Length` and
/// `Transfer-Encoding`, two different lengths, a transfer coding other than chunked): each
/// is how requests are smuggled past a proxy.
pub(crate) fn framing(head: &Head, limits: &Limits) -> Result<Framing, ReadError> {
    let encodings: Vec<&str> = head.headers_named("transfer-encoding").collect();
    let lengths: Vec<&str> = head.headers_named("content-length").collect();
    if !encodings.is_empty() {
        if !lengths.is_empty() {
            return Err(ReadError::bad(
                "a request with both Content-Length and Transfer-Encoding is refused",
            ));
        }
        let codings: Vec<String> = encodings
            .iter()
            .flat_map(|value| value.split(','))
            .map(|coding| coding.trim().to_ascii_lowercase())
            .collect();
        if codings.as_slice() != ["chunked"] {
            return Err(ReadError::Refused(
                501,
                format!(
                    "the transfer coding {:?} is not served",
                    encodings.join(", ")
                ),
            ));
        }
        return Ok(Framing::Chunked);
    }
    let mut length: Option<usize> = None;
    for value in lengths.iter().flat_map(|value| value.split(',')) {
        let value = value.trim();
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) || value.len() > 19 {
            return Err(ReadError::bad(format!("a bad Content-Length {value:?}")));
        }
        let parsed: usize = value
            .parse()
            .map_err(|_| ReadError::bad(format!("a bad Content-Length {value:?}")))?;
        if length.is_some_and(|known| known != parsed) {
            return Err(ReadError::bad("two different Content-Length values"));
        }
        length = Some(parsed);
    }
    match length {
        Some(length) if length > limits.max_body_bytes => Err(ReadError::Refused(
            413,
            format!(
                "the body of {length} bytes is over the limit of {} bytes",
                limits.max_body_bytes
            ),
        )),
        Some(0) | None => Ok(Framing::None),
        Some(length) => Ok(Framing::Length(length)),
    }
}

/// Reads a request's head.
pub(crate) fn read_head<R: Read>(
    reader: &mut R,
    buffer: &mut Buffer,
    limits: &Limits,
    before_read: &mut dyn FnMut() -> Result<(), ReadError>,
) -> Result<Head, ReadError> {
    loop {
        if !buffer.data.is_empty() {
            // Blank lines before a request are allowed (RFC 9112 §2.2).
            let blank = buffer
                .data
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            if blank > 0 {
                buffer.consume(blank);
            }
        }
        if !buffer.data.is_empty() {
            if let Some((head, used)) = parse_head(&buffer.data, limits)? {
                buffer.consume(used);
                return Ok(head);
            }
        }
        let started = !buffer.data.is_empty();
        match buffer.fill(reader, before_read) {
            Ok(0) if started => {
                return Err(ReadError::bad(
                    "the connection ended inside the request head",
                ))
            }
            Ok(0) => return Err(ReadError::Idle),
            Ok(_) => {}
            Err(ReadError::TimedOut) if !started => return Err(ReadError::Idle),
            Err(error) => return Err(error),
        }
    }
}

/// Reads a request's body as its framing says, within the body limit.
pub(crate) fn read_body<R: Read>(
    reader: &mut R,
    buffer: &mut Buffer,
    framing: Framing,
    limits: &Limits,
    before_read: &mut dyn FnMut() -> Result<(), ReadError>,
) -> Result<Vec<u8>, ReadError> {
    match framing {
        Framing::None => Ok(Vec::new()),
        Framing::Length(length) => {
            while buffer.data.len() < length {
                if buffer.fill(reader, before_read)? == 0 {
                    return Err(ReadError::bad("the connection ended inside the body"));
                }
            }
            let body = buffer.data[..length].to_vec();
            buffer.consume(length);
            Ok(body)
        }
        Framing::Chunked => read_chunked(reader, buffer, limits, before_read),
    }
}

fn read_chunked<R: Read>(
    reader: &mut R,
    buffer: &mut Buffer,
    limits: &Limits,
    before_read: &mut dyn FnMut() -> Result<(), ReadError>,
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        // The chunk-size line (with any extensions), bounded like a head.
        let (size, used) = loop {
            // Within the head's byte cap, as a head is, for the same reason.
            let window = &buffer.data[..buffer.data.len().min(limits.max_head_bytes)];
            match httparse::parse_chunk_size(window) {
                Ok(httparse::Status::Complete((used, size))) => break (size, used),
                Ok(httparse::Status::Partial) => {
                    if buffer.data.len() >= limits.max_head_bytes {
                        return Err(ReadError::bad("a chunk-size line that never ends"));
                    }
                    if buffer.fill(reader, before_read)? == 0 {
                        return Err(ReadError::bad("the connection ended inside the body"));
                    }
                }
                Err(_) => return Err(ReadError::bad("a malformed chunk size")),
            }
        };
        buffer.consume(used);
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size == 0 {
            return read_trailers(reader, buffer, limits, before_read).map(|()| body);
        }
        if size > limits.max_body_bytes.saturating_sub(body.len()) {
            return Err(ReadError::Refused(
                413,
                format!(
                    "the body is over the limit of {} bytes",
                    limits.max_body_bytes
                ),
            ));
        }
        // The chunk's data and its CRLF.
        while buffer.data.len() < size + 2 {
            if buffer.fill(reader, before_read)? == 0 {
                return Err(ReadError::bad("the connection ended inside the body"));
            }
        }
        if &buffer.data[size..size + 2] != b"\r\n" {
            return Err(ReadError::bad("a chunk that does not end with CRLF"));
        }
        body.extend_from_slice(&buffer.data[..size]);
        buffer.consume(size + 2);
    }
}

/// The trailer section after the last chunk: header lines up to an empty line, ignored, and
/// bounded like a head.
fn read_trailers<R: Read>(
    reader: &mut R,
    buffer: &mut Buffer,
    limits: &Limits,
    before_read: &mut dyn FnMut() -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let mut seen = 0usize;
    loop {
        if let Some(end) = buffer.data.windows(2).position(|pair| pair == b"\r\n") {
            let empty = end == 0;
            seen += end + 2;
            buffer.consume(end + 2);
            if seen > limits.max_head_bytes {
                return Err(ReadError::Refused(431, "the trailers are too long".into()));
            }
            if empty {
                return Ok(());
            }
            continue;
        }
        if buffer.data.len() + seen > limits.max_head_bytes {
            return Err(ReadError::Refused(431, "the trailers are too long".into()));
        }
        if buffer.fill(reader, before_read)? == 0 {
            return Err(ReadError::bad("the connection ended inside the trailers"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_head_bytes: 1024,
        max_headers: 16,
        max_body_bytes: 64,
    };

    fn read(bytes: &[u8]) -> Result<(Head, Vec<u8>), ReadError> {
        let mut reader = bytes;
        let mut buffer = Buffer::default();
        let mut ok = || Ok(());
        let head = read_head(&mut reader, &mut buffer, &LIMITS, &mut ok)?;
        let framing = framing(&head, &LIMITS)?;
        let body = read_body(&mut reader, &mut buffer, framing, &LIMITS, &mut ok)?;
        Ok((head, body))
    }

    #[test]
    fn a_request_with_a_length_is_read() {
        let (head, body) =
            read(b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nX-Y:  v \r\n\r\n{}")
                .unwrap();
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "/mcp");
        assert_eq!(head.header("host"), Some("a"));
        assert_eq!(head.header("x-y"), Some("v"));
        assert_eq!(body, b"{}");
        assert!(head.keep_alive());
    }

    #[test]
    fn a_chunked_body_is_joined_and_trailers_skipped() {
        let (_, body) = read(
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\n{\"\r\n4\r\na\":1\r\n0\r\nX: y\r\n\r\n",
        )
        .unwrap();
        assert_eq!(body, b"{\"a\":1");
    }

    #[test]
    fn smuggling_shapes_and_oversize_bodies_are_refused() {
        let both =
            read(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(matches!(both, Err(ReadError::Refused(400, _))), "{both:?}");
        let two = read(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n");
        assert!(matches!(two, Err(ReadError::Refused(400, _))), "{two:?}");
        let gzip = read(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
        assert!(matches!(gzip, Err(ReadError::Refused(501, _))), "{gzip:?}");
        let big = read(b"POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n");
        assert!(matches!(big, Err(ReadError::Refused(413, _))), "{big:?}");
        let big_chunks = read(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n");
        assert!(
            matches!(big_chunks, Err(ReadError::Refused(413, _))),
            "{big_chunks:?}"
        );
        let sign = read(b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx");
        assert!(matches!(sign, Err(ReadError::Refused(400, _))), "{sign:?}");
    }

    #[test]
    fn heads_over_their_limits_are_431_and_an_empty_input_is_idle() {
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.extend(vec![b'a'; 2000]);
        assert!(matches!(read(&long), Err(ReadError::Refused(431, _))));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..20 {
            many.extend(format!("H{i}: v\r\n").as_bytes());
        }
        many.extend(b"\r\n");
        assert!(matches!(read(&many), Err(ReadError::Refused(431, _))));
        assert_eq!(read(b""), Err(ReadError::Idle));
        assert!(matches!(
            read(b"GET / HTTP/1.1\r\n"),
            Err(ReadError::Refused(400, _))
        ));
        assert!(matches!(
            read(b"GET / HTTP/2.0\r\n\r\n"),
            Err(ReadError::Refused(505, _))
        ));
    }

    #[test]
    fn connection_close_and_http_1_0_end_the_connection() {
        let (head, _) = read(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").unwrap();
        assert!(!head.keep_alive());
        let (head, _) = read(b"GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(!head.keep_alive());
    }
}
