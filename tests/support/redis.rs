//! A real Redis for the shared-state tests: the distribution's `redis-server` (which `.ci/run`
//! installs; `TOOLWIRE_REDIS_SERVER` names another), started by the test on a loopback port
//! of its own with no persistence and a temporary folder, never the system service; stopped
//! (killed and reaped) when dropped, and restartable on the same port.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{eventually, LONG};

/// The `redis-server` program: `TOOLWIRE_REDIS_SERVER`, else the first on `PATH`.
fn program() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLWIRE_REDIS_SERVER") {
        return PathBuf::from(path);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("redis-server"))
        .find(|path| path.is_file())
        .expect(
            "no `redis-server` on PATH: install the distribution's package \
             (`apt-get install -y redis-server`, as .ci/run does) or set TOOLWIRE_REDIS_SERVER",
        )
}

/// A `redis-server` child.
pub struct Redis {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
}

impl Redis {
    /// Starts one on a free loopback port and waits until it answers `PING`.
    pub fn start(name: &str) -> Redis {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir =
            std::env::temp_dir().join(format!("toolwire-redis-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = Redis {
            child: None,
            port,
            dir,
        };
        redis.restart();
        redis
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// True when it answers `PING` with `+PONG`.
    pub fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
    }

    /// Kills it (what it held is lost: it persists nothing).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it (again) on its port, and waits until it answers.
    pub fn restart(&mut self) {
        self.stop();
        let log = std::fs::File::create(self.dir.join("redis.log")).unwrap();
        let child = Command::new(program())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start redis-server: {error}"));
        self.child = Some(child);
        assert!(
            eventually(LONG, || self.answers()),
            "redis-server on port {} did not answer PING; its log:\n{}",
            self.port,
            std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
        );
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
