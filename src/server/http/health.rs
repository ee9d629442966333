//! A load balancer's checks ([`super::HttpServerConfig::health_paths`]): alive while the
//! process serves, ready when every readiness check passes and the server is not draining.
//! They come before the Host, Origin and authorization checks (a balancer's probe carries no
//! token and names the instance by its address) because they reveal nothing: a status word
//! and, when not ready, the name the code gave the failing check (`draining` while
//! [`super::HttpServer::drain`] runs).

use super::socket::Socket;
use std::io::{self, Write};
use std::sync::atomic::Ordering;

use serde_json::json;

use super::request::Head;
use super::response::{self, write_full};
use super::HttpInner;

/// Answers `path` when it is a health path; `None` for any other path. `Some` holds whether
/// the connection may serve another request.
pub(crate) fn route(
    inner: &HttpInner,
    head: &Head,
    path: &str,
    socket: &mut Socket,
) -> io::Result<Option<bool>> {
    let Some((alive, ready)) = &inner.config.health_paths else {
        return Ok(None);
    };
    let readiness = if path == alive {
        None
    } else if path == ready {
        Some(if inner.draining.load(Ordering::SeqCst) {
            Some("draining".to_owned())
        } else {
            inner.server.shared().readiness.first_unready()
        })
    } else {
        return Ok(None);
    };
    let no_store = [("Cache-Control", "no-store".to_owned())];
    if head.method != "GET" && head.method != "HEAD" {
        let allow = [("Allow", "GET, HEAD".to_owned())];
        write_full(socket, 405, None, &allow, b"", true)?;
        return Ok(Some(true));
    }
    let (status, body) = match readiness {
        None => (200, json!({"status": "alive"})),
        Some(None) => (200, json!({"status": "ready"})),
        Some(Some(reason)) => (503, json!({"status": "unready", "reason": reason})),
    };
    let body = body.to_string().into_bytes();
    if head.method == "HEAD" {
        // The GET's headers, its length included, without the body.
        let headers = [
            ("Content-Type", "application/json".to_owned()),
            ("Content-Length", body.len().to_string()),
            no_store[0].clone(),
        ];
        socket.write_all(&response::head(status, &headers, true))?;
        socket.flush()?;
    } else {
        write_full(
            socket,
            status,
            Some("application/json"),
            &no_store,
            &body,
            true,
        )?;
    }
    Ok(Some(true))
}
