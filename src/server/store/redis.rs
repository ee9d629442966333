//! The Redis state store (feature `redis`): a small RESP2 client of our own over
//! [`std::net::TcpStream`], with a deadline on every operation, a bounded pool of
//! connections, a bounded backoff while Redis is down, and one thread for publish/subscribe.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::resp::{self, Limits, Reply};
use super::{Deliver, StateStore, StoreError};
use crate::error::{Error, Result};

/// Where the Redis store is and its bounds. `Debug` never shows the password.
#[derive(Clone)]
pub struct RedisConfig {
    host: String,
    port: u16,
    db: u32,
    password: Option<String>,
    timeout: Duration,
    max_connections: usize,
    prefix: String,
    max_value_bytes: usize,
    max_backoff: Duration,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("db", &self.db)
            .field("password", &self.password.as_ref().map(|_| "(hidden)"))
            .field("timeout", &self.timeout)
            .field("max_connections", &self.max_connections)
            .field("prefix", &self.prefix)
            .field("max_value_bytes", &self.max_value_bytes)
            .field("max_backoff", &self.max_backoff)
            .finish()
    }
}

impl RedisConfig {
    /// Redis at `host:port`, database 0, no password, every other setting at its default.
    pub fn new(host: impl Into<String>, port: u16) -> RedisConfig {
        RedisConfig {
            host: host.into(),
            port,
            db: 0,
            password: None,
            timeout: Duration::from_secs(1),
            max_connections: 16,
            prefix: "toolwire:".into(),
            max_value_bytes: 8 * 1024 * 1024,
            max_backoff: Duration::from_secs(2),
        }
    }

    /// Reads `redis://HOST:PORT/DB` or `redis://:PASSWORD@HOST:PORT/DB` (the port defaults
    /// to 6379, the database to 0; `HOST` may be a bracketed IPv6 address). TLS (`rediss://`)
    /// is not supported.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for another form; the text never holds the password.
    pub fn from_url(url: &str) -> Result<RedisConfig> {
        let bad = |why: &str| {
            let shown = url.rsplit('@').next().unwrap_or_default();
            Error::Config(format!(
                "the state store URL …{shown} is not redis://[:PASSWORD@]HOST:PORT[/DB]: {why}"
            ))
        };
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("it must start with redis:// (rediss:// is not supported)"))?;
        let (password, rest) = match rest.rsplit_once('@') {
            Some((user_info, rest)) => {
                let password = user_info
                    .strip_prefix(':')
                    .ok_or_else(|| bad("only a password is supported, as :PASSWORD@"))?;
                if password.is_empty() {
                    return Err(bad("the password is empty"));
                }
                (Some(password.to_owned()), rest)
            }
            None => (None, rest),
        };
        let (authority, db) = match rest.split_once('/') {
            Some((authority, "")) => (authority, 0),
            Some((authority, db)) => (
                authority,
                db.parse()
                    .map_err(|_| bad("the database is not a number"))?,
            ),
            None => (rest, 0),
        };
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address without its ]"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port = match port {
            Some(port) => port.parse().map_err(|_| bad("the port is not a number"))?,
            None => 6379,
        };
        let mut config = RedisConfig::new(host, port).db(db);
        config.password = password;
        Ok(config)
    }

    /// The database (`SELECT`). Defaults to 0.
    pub fn db(mut self, db: u32) -> Self {
        self.db = db;
        self
    }

    /// The password (`AUTH`); never logged or shown. Defaults to none.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// The deadline of every store operation (connecting, `AUTH` and `SELECT` included): past
    /// it the operation fails, and the request that needed it is answered with the error.
    /// 1 ms to 1 minute. Defaults to 1 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most connections open at once for commands (publish/subscribe has one more); an
    /// operation that finds them all busy waits for one within its deadline. 1 to 1,024.
    /// Defaults to 16.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// What every key and channel starts with, so that several deployments can share one
    /// Redis. At most 256 bytes. Defaults to `toolwire:`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The largest value stored or read, and the largest published message (a task's record
    /// with its result must fit: keep it above [`super::super::ServerConfig::max_task_result_bytes`]).
    /// At least 1 KiB. Defaults to 8 MiB.
    pub fn max_value_bytes(mut self, bytes: usize) -> Self {
        self.max_value_bytes = bytes;
        self
    }

    /// The longest wait before the next attempt to reach a Redis that is down: operations
    /// meanwhile fail at once. The wait starts at 50 ms and doubles with each failure up to
    /// this. 1 ms to 1 minute. Defaults to 2 s.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    fn check(&self) -> Result<()> {
        let minute = Duration::from_secs(60);
        let ms = Duration::from_millis(1);
        for (name, value) in [("timeout", self.timeout), ("max_backoff", self.max_backoff)] {
            if value < ms || value > minute {
                return Err(Error::Config(format!(
                    "the Redis store's {name} must be 1 ms to 1 minute, not {value:?}"
                )));
            }
        }
        if !(1..=1024).contains(&self.max_connections) {
            return Err(Error::Config(format!(
                "the Redis store's max_connections must be 1 to 1024, not {}",
                self.max_connections
            )));
        }
        if self.prefix.len() > 256 || self.max_value_bytes < 1024 {
            return Err(Error::Config(
                "the Redis store's prefix must be at most 256 bytes and max_value_bytes at least 1024"
                    .into(),
            ));
        }
        Ok(())
    }

    fn limits(&self) -> Limits {
        Limits {
            max_bulk: self.max_value_bytes,
            max_items: 1024,
            max_depth: 4,
            max_total: self.max_value_bytes + 64 * 1024,
        }
    }

    fn place(&self) -> String {
        format!("redis://{}:{}/{}", self.host, self.port, self.db)
    }
}

/// Where Redis stands: reached, or down since a failure until the next attempt.
#[derive(Default)]
struct Health {
    failures: u32,
    retry_at: Option<Instant>,
    last: String,
}

struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

struct Inner {
    config: RedisConfig,
    idle: Mutex<Vec<Connection>>,
    /// Connections out of the pool right now.
    busy: Mutex<usize>,
    freed: Condvar,
    health: Mutex<Health>,
    /// Channels subscribed to (with their prefix), and what each delivers to.
    channels: Mutex<HashMap<Vec<u8>, Vec<Deliver>>>,
    /// True once the publish/subscribe thread runs.
    listening: Mutex<bool>,
}

/// The shared state store on Redis (feature `redis`). Cheap to clone.
///
/// Tasks' records, their leases and budget counts are plain keys with a TTL (`SET … PX`,
/// `INCR` and `PEXPIRE` in one script); a compare-and-set is a short Lua script; events are
/// `PUBLISH`ed and read by one thread per store on its own connection (`SUBSCRIBE`), which
/// reconnects with the same backoff and exits within half a second once the store is dropped.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

const SWAP: &[u8] = b"local v = redis.call('GET', KEYS[1]) \
if ARGV[1] == '0' then if v then return 0 end elseif v ~= ARGV[2] then return 0 end \
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4]) return 1";

const COUNT: &[u8] = b"local n = redis.call('INCR', KEYS[1]) \
local t = redis.call('PTTL', KEYS[1]) \
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) t = tonumber(ARGV[1]) end \
return {n, t}";

const UNCOUNT: &[u8] =
    b"if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('DECR', KEYS[1]) end return 1";

fn millis(duration: Duration) -> Vec<u8> {
    duration.as_millis().max(1).to_string().into_bytes()
}

impl RedisStore {
    /// A store on the Redis `config` names. Connects lazily: a Redis that is down now makes
    /// the first operations fail, not this.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a setting out of its bounds.
    pub fn open(config: RedisConfig) -> Result<RedisStore> {
        config.check()?;
        Ok(RedisStore {
            inner: Arc::new(Inner {
                config,
                idle: Mutex::new(Vec::new()),
                busy: Mutex::new(0),
                freed: Condvar::new(),
                health: Mutex::new(Health::default()),
                channels: Mutex::new(HashMap::new()),
                listening: Mutex::new(false),
            }),
        })
    }

    fn key(&self, key: &str) -> Vec<u8> {
        let mut full = self.inner.config.prefix.clone().into_bytes();
        full.extend_from_slice(key.as_bytes());
        full
    }

    fn too_large(&self, bytes: usize) -> Result<(), StoreError> {
        let most = self.inner.config.max_value_bytes;
        if bytes > most {
            return Err(StoreError(format!(
                "a value of {bytes} bytes is past the store's limit of {most}"
            )));
        }
        Ok(())
    }

    /// Runs one command within the store's deadline.
    fn run(&self, args: &[&[u8]]) -> Result<Reply, StoreError> {
        let inner = &self.inner;
        let deadline = Instant::now() + inner.config.timeout;
        inner.ready()?;
        let mut connection = inner.take(deadline)?;
        let outcome = exchange(&mut connection, args, deadline, &inner.config.limits());
        match outcome {
            Ok(reply) => {
                inner.reached();
                inner.give(Some(connection));
                match reply {
                    Reply::Error(text) => Err(StoreError(format!(
                        "{} refused a command: {text}",
                        inner.config.place()
                    ))),
                    reply => Ok(reply),
                }
            }
            Err(error) => {
                inner.give(None);
                Err(inner.failed(&error))
            }
        }
    }
}

impl Inner {
    /// Fails at once while Redis is known down and its next attempt has not come.
    fn ready(&self) -> Result<(), StoreError> {
        let health = self.health.lock();
        if let Some(at) = health.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(StoreError(format!(
                    "{} is unreachable ({}); the next attempt is in {} ms",
                    self.config.place(),
                    health.last,
                    at.duration_since(now).as_millis().max(1)
                )));
            }
        }
        Ok(())
    }

    fn reached(&self) {
        let mut health = self.health.lock();
        if health.failures > 0 {
            log::info!(target: crate::server::LOG_TARGET, "the state store {} is reachable again", self.config.place());
        }
        *health = Health::default();
    }

    /// Records a failure (the next attempt waits a backoff) and says it.
    fn failed(&self, error: &std::io::Error) -> StoreError {
        // The idle connections are as likely broken (Redis went away): none is tried again.
        self.idle.lock().clear();
        let mut health = self.health.lock();
        let text = match error.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("no answer within {:?}", self.config.timeout)
            }
            _ => error.to_string(),
        };
        let wait = Duration::from_millis(50)
            .saturating_mul(1u32 << health.failures.min(16))
            .min(self.config.max_backoff);
        health.failures = health.failures.saturating_add(1);
        health.retry_at = Some(Instant::now() + wait);
        health.last.clone_from(&text);
        if health.failures == 1 {
            log::warn!(target: crate::server::LOG_TARGET, "the state store {} failed: {text}", self.config.place());
        }
        StoreError(format!("{} failed: {text}", self.config.place()))
    }

    /// An idle connection or a new one, waiting within `deadline` while all are busy.
    fn take(&self, deadline: Instant) -> Result<Connection, StoreError> {
        {
            let mut busy = self.busy.lock();
            while *busy >= self.config.max_connections {
                if self.freed.wait_until(&mut busy, deadline).timed_out() {
                    return Err(StoreError(format!(
                        "all {} connections to {} stayed busy for {:?}",
                        self.config.max_connections,
                        self.config.place(),
                        self.config.timeout
                    )));
                }
            }
            *busy += 1;
        }
        if let Some(connection) = self.idle.lock().pop() {
            return Ok(connection);
        }
        self.connect(deadline).map_err(|error| {
            self.give(None);
            self.failed(&error)
        })
    }

    /// Gives a connection back (`None`: it was dropped).
    fn give(&self, connection: Option<Connection>) {
        if let Some(connection) = connection {
            self.idle.lock().push(connection);
        }
        *self.busy.lock() -= 1;
        self.freed.notify_one();
    }

    fn connect(&self, deadline: Instant) -> std::io::Result<Connection> {
        let config = &self.config;
        let addresses = (config.host.as_str(), config.port).to_socket_addrs()?;
        let mut last = None;
        let mut stream = None;
        for address in addresses {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(&address, left) {
                Ok(connected) => {
                    stream = Some(connected);
                    break;
                }
                Err(error) => last = Some(error),
            }
        }
        let stream = stream.ok_or_else(|| {
            last.unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "no address answered")
            })
        })?;
        stream.set_nodelay(true)?;
        let mut connection = Connection {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        };
        let limits = config.limits();
        if let Some(password) = &config.password {
            let reply = exchange(
                &mut connection,
                &[b"AUTH", password.as_bytes()],
                deadline,
                &limits,
            )?;
            if let Reply::Error(text) = reply {
                // Redis's answer names no password; say so plainly either way.
                return Err(std::io::Error::other(format!(
                    "AUTH was refused: {}",
                    text.chars().take(200).collect::<String>()
                )));
            }
        }
        if config.db != 0 {
            let db = config.db.to_string();
            if let Reply::Error(text) = exchange(
                &mut connection,
                &[b"SELECT", db.as_bytes()],
                deadline,
                &limits,
            )? {
                return Err(std::io::Error::other(format!(
                    "SELECT {db} was refused: {text}"
                )));
            }
        }
        Ok(connection)
    }
}

/// Sends one command and reads its reply, both within `deadline`.
fn exchange(
    connection: &mut Connection,
    args: &[&[u8]],
    deadline: Instant,
    limits: &Limits,
) -> std::io::Result<Reply> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the deadline passed",
        ));
    }
    connection.writer.set_write_timeout(Some(left))?;
    connection.writer.set_read_timeout(Some(left))?;
    connection.writer.write_all(&resp::encode(args))?;
    resp::read_reply(&mut connection.reader, limits)
}

fn unexpected(reply: &Reply) -> StoreError {
    StoreError(format!("the store answered unexpectedly: {reply:?}"))
}

impl StateStore for RedisStore {
    fn shared(&self) -> bool {
        true
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.run(&[b"GET", &self.key(key)])? {
            Reply::Bulk(value) => Ok(value),
            other => Err(unexpected(&other)),
        }
    }

    fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        self.too_large(value.len())?;
        self.run(&[b"SET", &self.key(key), value, b"PX", &millis(ttl)])
            .map(drop)
    }

    fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.too_large(value.len())?;
        let (given, expected) = match expected {
            Some(expected) => (&b"1"[..], expected),
            None => (&b"0"[..], &b""[..]),
        };
        match self.run(&[
            b"EVAL",
            SWAP,
            b"1",
            &self.key(key),
            given,
            expected,
            value,
            &millis(ttl),
        ])? {
            Reply::Integer(done) => Ok(done == 1),
            other => Err(unexpected(&other)),
        }
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.run(&[b"DEL", &self.key(key)]).map(drop)
    }

    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), StoreError> {
        match self.run(&[b"EVAL", COUNT, b"1", &self.key(key), &millis(window)])? {
            Reply::Array(Some(items)) => match items.as_slice() {
                [Reply::Integer(count), Reply::Integer(left)] => Ok((
                    u64::try_from(*count).unwrap_or_default(),
                    Duration::from_millis(u64::try_from(*left).unwrap_or_default()),
                )),
                _ => Err(StoreError(format!(
                    "the store answered a count unexpectedly: {items:?}"
                ))),
            },
            other => Err(unexpected(&other)),
        }
    }

    fn uncount(&self, key: &str) -> Result<(), StoreError> {
        self.run(&[b"EVAL", UNCOUNT, b"1", &self.key(key)])
            .map(drop)
    }

    fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StoreError> {
        self.too_large(message.len())?;
        self.run(&[b"PUBLISH", &self.key(channel), message])
            .map(drop)
    }

    fn subscribe(&self, channel: &str, deliver: Deliver) -> Result<(), StoreError> {
        let mut channels = self.inner.channels.lock();
        if channels.len() >= 1024 && !channels.contains_key(self.key(channel).as_slice()) {
            return Err(StoreError(
                "the store holds 1024 subscribed channels, its limit".into(),
            ));
        }
        channels.entry(self.key(channel)).or_default().push(deliver);
        drop(channels);
        let mut listening = self.inner.listening.lock();
        if !*listening {
            let weak = Arc::downgrade(&self.inner);
            std::thread::Builder::new()
                .name("toolwire-store-sub".into())
                .spawn(move || listen(&weak))
                .map_err(|error| {
                    StoreError(format!("the subscriber thread did not start: {error}"))
                })?;
            *listening = true;
        }
        Ok(())
    }
}

/// How often the subscriber thread looks whether its store is gone or has new channels.
const POLL: Duration = Duration::from_millis(500);

/// The subscriber thread: one connection `SUBSCRIBE`d to every channel, reconnected with
/// the store's backoff; ends once the store is dropped.
fn listen(weak: &Weak<Inner>) {
    let mut failures = 0u32;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let deadline = Instant::now() + inner.config.timeout;
        let error = match inner.connect(deadline) {
            Ok(connection) => {
                drop(inner);
                let error = subscribed(weak, connection, &mut failures);
                match error {
                    Some(error) => error,
                    None => return,
                }
            }
            Err(error) => error,
        };
        let Some(inner) = weak.upgrade() else { return };
        failures = failures.saturating_add(1);
        let wait = Duration::from_millis(50)
            .saturating_mul(1u32 << failures.min(16))
            .min(inner.config.max_backoff);
        log::debug!(target: crate::server::LOG_TARGET, "the state store's subscription to {} failed: {error}; again in {wait:?}", inner.config.place());
        drop(inner);
        std::thread::sleep(wait);
    }
}

/// Reads messages on a connection until it fails (`Some`) or the store is gone (`None`).
fn subscribed(
    weak: &Weak<Inner>,
    mut connection: Connection,
    failures: &mut u32,
) -> Option<std::io::Error> {
    use std::io::BufRead;
    let mut sent: Vec<Vec<u8>> = Vec::new();
    loop {
        let inner = weak.upgrade()?;
        let limits = inner.config.limits();
        let timeout = inner.config.timeout;
        let wanted: Vec<Vec<u8>> = inner
            .channels
            .lock()
            .keys()
            .filter(|channel| !sent.contains(channel))
            .cloned()
            .collect();
        if !wanted.is_empty() {
            let mut args: Vec<&[u8]> = vec![b"SUBSCRIBE"];
            args.extend(wanted.iter().map(Vec::as_slice));
            let written = connection
                .writer
                .set_write_timeout(Some(timeout))
                .and_then(|()| connection.writer.write_all(&resp::encode(&args)));
            if let Err(error) = written {
                return Some(error);
            }
            sent.extend(wanted);
        }
        drop(inner);
        if let Err(error) = connection.writer.set_read_timeout(Some(POLL)) {
            return Some(error);
        }
        match connection.reader.fill_buf() {
            Ok([]) => {
                return Some(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the store closed the connection",
                ))
            }
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(error) => return Some(error),
        }
        // A reply has begun: the rest must come within the store's deadline.
        if let Err(error) = connection.writer.set_read_timeout(Some(timeout)) {
            return Some(error);
        }
        let reply = match resp::read_reply(&mut connection.reader, &limits) {
            Ok(reply) => reply,
            Err(error) => return Some(error),
        };
        *failures = 0;
        let Reply::Array(Some(items)) = reply else {
            continue;
        };
        if let [Reply::Bulk(Some(kind)), Reply::Bulk(Some(channel)), Reply::Bulk(Some(message))] =
            items.as_slice()
        {
            if kind.as_slice() != b"message" {
                continue;
            }
            let inner = weak.upgrade()?;
            let delivers = inner.channels.lock().get(channel).cloned();
            drop(inner);
            for deliver in delivers.unwrap_or_default() {
                deliver(message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_and_passwords_never_shown() {
        let config = RedisConfig::from_url("redis://:s3cret@cache.internal:6380/2").unwrap();
        assert_eq!(
            (config.host.as_str(), config.port, config.db),
            ("cache.internal", 6380, 2)
        );
        assert_eq!(config.password.as_deref(), Some("s3cret"));
        assert!(!format!("{config:?}").contains("s3cret"));
        let config = RedisConfig::from_url("redis://[::1]").unwrap();
        assert_eq!(
            (config.host.as_str(), config.port, config.db),
            ("::1", 6379, 0)
        );
        for url in [
            "rediss://host:1/0",
            "redis://user:s3cret@host:1/0",
            "redis://:s3cret@host:port/0",
            "redis://:s3cret@:1/0",
            "redis://host:1/db",
        ] {
            let error = RedisConfig::from_url(url).unwrap_err().to_string();
            assert!(!error.contains("s3cret"), "{error}");
        }
        assert!(RedisStore::open(RedisConfig::new("h", 1).timeout(Duration::ZERO)).is_err());
    }

    #[test]
    fn a_store_that_is_down_fails_fast_and_waits_before_trying_again() {
        // A port nothing listens on: connecting is refused at once.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let store = RedisStore::open(RedisConfig::new("127.0.0.1", port)).unwrap();
        let first = store.get("k").unwrap_err().to_string();
        assert!(first.contains("failed"), "{first}");
        let second = store.get("k").unwrap_err().to_string();
        assert!(second.contains("the next attempt is in"), "{second}");
    }
}
