//! Secrets stay secret: a password in a URL, a bearer token and header values never show in
//! an error (its `Display` and `Debug`), in a log record at any level, or in the `Debug` of a
//! config. Every failing path is driven for real (a refused port, a server answering 401 and
//! 500 that quotes the credentials back) and everything it produced is searched.
//!
//! The test logger is global, so this file is its own test binary.
#![cfg(feature = "http")]

use crate::support::http_fake;

use std::sync::{Mutex, Once};
use std::time::Duration;

use http_fake::{initialize_result, result, FakeServer};
use log::{Level, LevelFilter, Log, Metadata, Record};
use serde_json::json;
use toolwire::config::LoadOptions;
use toolwire::transport::{mask_url, HttpTransport};
use toolwire::{Error, HttpConfig, McpClient, McpConfig, ProtocolMode, ServerConfigs, StdioConfig};

/// The secret planted everywhere: as a URL password, a bearer token and a header value.
const SECRET: &str = "S3CRET-TOKEN-1234";

/// Every record logged in this binary, at every level: (level, target, message).
static RECORDS: Mutex<Vec<(Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, _metadata: &Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &Record<'_>) {
        let entry = (
            record.level(),
            record.target().to_owned(),
            record.args().to_string(),
        );
        RECORDS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(entry);
    }

    fn flush(&self) {}
}

pub(crate) fn capture_logs() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // `set_logger` with a static: `set_boxed_logger` needs log's `std` feature, which
        // the crate does not turn on.
        static CAPTURE: Capture = Capture;
        log::set_logger(&CAPTURE).expect("the only logger of this binary");
        log::set_max_level(LevelFilter::Trace);
    });
}

/// Panics when `text` holds the secret, or any 8 of its characters in a row (a secret cut
/// across two lines still shows).
fn assert_hidden(what: &str, text: &str) {
    let chars: Vec<char> = SECRET.chars().collect();
    for window in chars.windows(8) {
        let piece: String = window.iter().collect();
        assert!(
            !text.contains(&piece),
            "{what} shows the secret ({piece:?}):\n{text}"
        );
    }
}

/// Every record logged so far, searched. ureq's `ureq_proto` trace records are left out:
/// they are hex dumps of the raw bytes on the wire (the request's headers among them), which
/// no library above ureq can redact; the crate docs say to keep that target below trace, and
/// the `toolwire` command drops them (see cli_output_safety.rs).
fn assert_logs_hidden() {
    let records = RECORDS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    assert!(!records.is_empty(), "nothing was logged");
    for (level, target, message) in &records {
        if target.starts_with("ureq_proto") && *level == Level::Trace {
            continue;
        }
        assert_hidden(&format!("a {level} record of {target}"), message);
    }
}

/// Every record logged so far in this binary: (level, target, message).
pub(crate) fn records() -> Vec<(Level, String, String)> {
    RECORDS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

fn assert_error_hidden(error: &Error) {
    assert_hidden("the error's Display", &error.to_string());
    assert_hidden("the error's Debug", &format!("{error:?}"));
    assert_hidden("the error's alternate Debug", &format!("{error:#?}"));
}

/// `url` with the secret as its password.
fn with_password(url: &str) -> String {
    url.replacen("http://", &format!("http://agent:{SECRET}@"), 1)
}

/// A URL on 127.0.0.1 where nothing listens, with the secret as its password.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    drop(listener);
    with_password(&url)
}

/// An HTTP config carrying the secret three ways.
fn secret_config(url: &str) -> HttpConfig {
    HttpConfig::new(url)
        .bearer_token(SECRET)
        .header("X-Api-Key", SECRET)
        .connect_timeout(Duration::from_secs(5))
        .response_timeout(Duration::from_secs(5))
}

fn legacy() -> McpConfig {
    McpConfig::default()
        .mode(ProtocolMode::Legacy)
        .initialize_timeout(Duration::from_secs(10))
}

#[test]
fn a_refused_connection_shows_no_secret() {
    capture_logs();
    let url = refused_url();
    let error =
        McpClient::connect_http(secret_config(&url), legacy()).expect_err("nothing listens there");
    assert_error_hidden(&error);
    let text = error.to_string();
    assert!(text.contains("agent:***@127.0.0.1"), "{text}");
    // The same through the auto-detecting mode, which tries server/discover first.
    let error = McpClient::connect_http(
        secret_config(&url),
        McpConfig::default().mode(ProtocolMode::Auto),
    )
    .expect_err("nothing listens there");
    assert_error_hidden(&error);
    assert_logs_hidden();
}

#[test]
fn a_401_that_quotes_the_credentials_shows_no_secret() {
    capture_logs();
    // A server that refuses the credentials and quotes them back, as many do.
    let server = FakeServer::start(|req, reply| {
        let quoted = format!(
            "{{\"error\":\"invalid_token\",\"authorization\":\"{}\",\"key\":\"{}\"}}",
            req.header("authorization").unwrap_or(""),
            req.header("x-api-key").unwrap_or("")
        );
        reply.send(
            401,
            "application/json",
            &[("WWW-Authenticate", "Bearer error=\"invalid_token\"")],
            &quoted,
        );
    });
    let url = with_password(&server.url);
    let error = McpClient::connect_http(secret_config(&url), legacy())
        .expect_err("the server refuses every request");
    assert_error_hidden(&error);
    let http = error.http().expect("an HTTP error");
    assert_eq!(http.status, 401);
    assert_eq!(http.url, mask_url(&url));
    assert!(http.url.contains("agent:***@"), "{}", http.url);
    assert!(http.body_excerpt.contains("invalid_token"), "{http:?}");
    assert!(http.body_excerpt.contains("***"), "{http:?}");
    // The server did get the credentials: they were masked on the way back only.
    let seen = server.requests();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );

    // Without a bearer token, ureq sends the URL's userinfo as Basic credentials, which the
    // server quotes back base64-encoded: they are taken out too.
    let basic = HttpConfig::new(url.clone()).connect_timeout(Duration::from_secs(5));
    let error = McpClient::connect_http(basic, legacy()).expect_err("refused");
    assert_error_hidden(&error);
    let http = error.http().expect("an HTTP error");
    assert!(
        http.body_excerpt.contains("\"authorization\":\"***\""),
        "{http:?}"
    );
    assert_logs_hidden();
}

#[test]
fn a_500_in_a_working_session_shows_no_secret() {
    capture_logs();
    let server = FakeServer::start(|req, reply| match req.rpc().as_str() {
        "initialize" => reply.json(200, &initialize_result(req, "2025-11-25"), &[]),
        "notifications/initialized" => reply.accepted(),
        "tools/list" => {
            let body = format!(
                "internal error for key {}",
                req.header("x-api-key").unwrap_or("")
            );
            reply.send(500, "text/plain", &[], &body);
        }
        "ping" => reply.json(200, &result(req, json!({})), &[]),
        _ if req.method == "GET" => reply.send(405, "", &[], ""),
        _ => reply.send(202, "", &[], ""),
    });
    let url = with_password(&server.url);
    let client = McpClient::connect_http(secret_config(&url), legacy()).expect("a session");
    client.ping().expect("ping");
    assert_hidden("the client's Debug", &format!("{client:?}"));
    let error = client.list_tools().expect_err("tools/list answers 500");
    assert_error_hidden(&error);
    assert_eq!(error.http().map(|http| http.status), Some(500));
    client.close().expect("close");
    assert_logs_hidden();
}

#[test]
fn bad_urls_are_refused_without_their_password() {
    capture_logs();
    for url in [
        format!("ftp://agent:{SECRET}@127.0.0.1/mcp"),
        format!("http://agent:{SECRET}@bad host/mcp"),
        format!("agent:{SECRET}@127.0.0.1/mcp"),
    ] {
        let error = HttpTransport::new(secret_config(&url)).expect_err("not a usable URL");
        assert!(matches!(error, Error::Config(_)), "{error:?}");
        assert_error_hidden(&error);
        assert!(error.to_string().contains("agent:***@"), "{error}");
    }
}

#[test]
fn the_debug_of_every_config_shows_no_secret() {
    let http = secret_config(&with_password("http://127.0.0.1:9/mcp?api_key=x"));
    let debug = format!("{http:?}");
    assert_hidden("HttpConfig's Debug", &debug);
    assert!(debug.contains(r#""X-Api-Key": "***""#), "{debug}");
    assert!(
        debug.contains("agent:***@127.0.0.1:9/mcp?api_key=***"),
        "{debug}"
    );
    let transport = HttpTransport::new(http).expect("a valid config");
    assert_hidden("HttpTransport's Debug", &format!("{transport:?}"));
    let stdio = StdioConfig::new("server").env("GITHUB_TOKEN", SECRET);
    let debug = format!("{stdio:?}");
    assert_hidden("StdioConfig's Debug", &debug);
    assert!(debug.contains(r#""GITHUB_TOKEN": "***""#), "{debug}");

    let options = LoadOptions::new()
        .process_env(false)
        .var("TOKEN", SECRET)
        .input("api-key", SECRET);
    assert_hidden("LoadOptions' Debug", &format!("{options:?}"));
    let text = json!({"mcpServers": {
        "remote": {"type": "http", "url": format!("http://agent:{SECRET}@127.0.0.1:9/mcp"),
                   "headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": SECRET}},
        "local": {"command": "server", "env": {"GITHUB_TOKEN": "${TOKEN}"}}}})
    .to_string();
    let configs = ServerConfigs::parse(&text, &options).expect("a valid config");
    let debug = format!("{configs:?} {:?}", configs.get("remote"));
    assert_hidden("ServerConfigs' Debug", &debug);
    assert!(debug.contains(r#""Authorization": "***""#), "{debug}");
}

#[test]
fn a_config_file_url_keeps_its_password() {
    capture_logs();
    let options = LoadOptions::new().process_env(false);
    // Not an http(s) URL: the error quotes it, masked.
    let text = json!({"mcpServers": {"remote": {"type": "http",
        "url": format!("ftp://agent:{SECRET}@127.0.0.1/mcp")}}})
    .to_string();
    let error = ServerConfigs::parse(&text, &options).expect_err("not http");
    assert_error_hidden(&error);
    assert!(error.to_string().contains("agent:***@"), "{error}");
    // A valid entry whose server cannot be reached.
    let text = json!({"mcpServers": {"remote": {"type": "http", "url": refused_url(),
        "headers": {"Authorization": format!("Bearer {SECRET}")}}}})
    .to_string();
    let configs = ServerConfigs::parse(&text, &options).expect("a valid entry");
    let error = configs
        .connect("remote", legacy())
        .expect_err("nothing listens there");
    assert_error_hidden(&error);
    assert_logs_hidden();
}
