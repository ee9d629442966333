//! The MCP server's calls per second beside baselines in the same run: over stdio,
//! `examples/tool_server.rs` (on `toolwire::server`) beside `examples/handrolled_tool_server.rs`
//! (the std-and-serde_json server it replaced), driven by the same raw pipe loop; over HTTP,
//! `HttpServer` beside a minimal raw HTTP responder (one thread per connection, a fixed JSON
//! answer), driven by the same raw keep-alive POST loop. Prints a table of ratios: calls per
//! second, and the server's CPU time per call (over stdio the server process's, from
//! `getrusage(RUSAGE_CHILDREN)`; over HTTP this process's less the load threads' own). The
//! baseline and toolwire alternate within each of five rounds; each ratio is the median of
//! the rounds' ratios.
//!
//! Then what authorization adds to an HTTP call: `HttpServer` with `Authorization` in front
//! (JWT ES256 with the verified-token cache and without, JWT RS256 without when `openssl`
//! can make the key, a static token; JWT rows with feature `oauth`) beside the same server
//! without, the same loop sending `Authorization: Bearer` on every POST, in the same rounds.
//!
//! ```text
//! cargo bench --bench server            # TOOLWIRE_BENCH_SCALE=0.2 for a quick run
//! cargo bench --features oauth --bench server -- auth   # only the authorization rows
//! ```
//!
//! `cargo bench --bench server -- http` (or `stdio`, or any part of a row's label) runs only
//! the rows whose label has it. `TOOLWIRE_BENCH_TOOL_SERVER=PATH` measures that build of `examples/tool_server.rs` (one
//! with `--pooled`, from another revision) over stdio instead of building this one.

#[path = "support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{cpu_time, scale, thread_cpu};
use toolwire::harness::LocalTool;
use toolwire::server::{
    Authorization, CallToolResult, HttpServer, HttpServerConfig, Server, ServerConfig, StaticTokens,
};

const WINDOW: usize = 64;

/// The release build of the example `name`, built now; `TOOLWIRE_BENCH_TOOL_SERVER` names
/// another build of `tool_server` to measure instead (an earlier revision's, say).
fn example(name: &str) -> PathBuf {
    if name == "tool_server" {
        if let Some(path) = std::env::var_os("TOOLWIRE_BENCH_TOOL_SERVER") {
            return PathBuf::from(path);
        }
    }
    let exe = std::env::current_exe().expect("bench path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--example", name])
        .status()
        .expect("cargo build");
    assert!(status.success());
    profile_dir.join("examples").join(name)
}

fn line(id: usize, tool: bool) -> String {
    if tool {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"m{id}\"}}}}}}\n"
        )
    } else {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"echo\",\"params\":{{\"n\":{id}}}}}\n"
        )
    }
}

/// Calls per second and the server's CPU µs per call of one run.
#[derive(Clone, Copy)]
struct Run {
    rate: f64,
    cpu_us: f64,
}

/// One thread keeps `window` requests in the server's stdin, writing one for each answer;
/// the server process's CPU time counts from its start to its exit.
fn stdio_loop(server: &(PathBuf, &[&str]), count: usize, window: usize, tool: bool) -> Run {
    let cpu_before = cpu_time(libc::RUSAGE_CHILDREN);
    let mut child = Command::new(&server.0)
        .args(server.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = String::new();
    let started = Instant::now();
    let mut next = 0;
    while next < window.min(count) {
        stdin.write_all(line(next, tool).as_bytes()).unwrap();
        next += 1;
    }
    stdin.flush().unwrap();
    for _ in 0..count {
        answer.clear();
        stdout.read_line(&mut answer).unwrap();
        assert!(answer.contains("\"result\""), "{answer}");
        if next < count {
            stdin.write_all(line(next, tool).as_bytes()).unwrap();
            stdin.flush().unwrap();
            next += 1;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.wait();
    let cpu = cpu_time(libc::RUSAGE_CHILDREN) - cpu_before;
    Run {
        rate: count as f64 / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / count as f64,
    }
}

/// A minimal HTTP responder: reads a request head and its `Content-Length` body, answers a
/// fixed JSON-RPC result with the request's id; one thread per connection, keep-alive.
fn raw_responder() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let thread = std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = stream.set_nodelay(true);
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut header = String::new();
                    loop {
                        header.clear();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header == "\r\n" {
                            break;
                        }
                        if let Some(value) =
                            header.to_ascii_lowercase().strip_prefix("content-length:")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let id = serde_json::from_slice::<serde_json::Value>(&body)
                        .map(|v| v["id"].clone())
                        .unwrap_or_default();
                    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "m"}], "isError": false}}).to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, thread)
}

/// One keep-alive connection posting `count` 2026-07-28 calls of `tool` in a row, each with
/// `Authorization: Bearer <token>` when a token is given; the time it took and the CPU time
/// this thread spent.
fn http_loop(url: &str, tool: &str, token: Option<&str>, count: usize) -> (Duration, Duration) {
    let cpu_before = thread_cpu();
    let host = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let stream = TcpStream::connect(&host).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let authorization = token.map_or(String::new(), |token| {
        format!("Authorization: Bearer {token}\r\n")
    });
    let started = Instant::now();
    for id in 0..count {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"message": "m"},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n{authorization}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        writer.write_all(request.as_bytes()).unwrap();
        let mut length = 0usize;
        let mut head = String::new();
        let mut header = String::new();
        loop {
            header.clear();
            if reader.read_line(&mut header).unwrap() == 0 {
                panic!("call {id}: the server closed the connection after {head:?}");
            }
            head.push_str(&header);
            if header == "\r\n" {
                break;
            }
            if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0u8; length];
        reader.read_exact(&mut answer).unwrap();
        assert!(
            serde_json::from_slice::<serde_json::Value>(&answer)
                .is_ok_and(|answer| answer["jsonrpc"] == "2.0" && answer["id"] == id),
            "call {id}: {head}{}",
            String::from_utf8_lossy(&answer)
        );
    }
    (started.elapsed(), thread_cpu() - cpu_before)
}

/// `threads` connections at once, `count` calls of `tool` each (with `token`, as
/// [`http_loop`]): the calls per second of all of them, and the CPU time per call of this
/// process less the load threads' own (the server's, since nothing else runs).
fn http_rate(url: &str, tool: &str, token: Option<&str>, threads: usize, count: usize) -> Run {
    let cpu_before = cpu_time(libc::RUSAGE_SELF);
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let url = url.to_owned();
            let tool = tool.to_owned();
            let token = token.map(str::to_owned);
            std::thread::spawn(move || http_loop(&url, &tool, token.as_deref(), count))
        })
        .collect();
    let mut load_cpu = Duration::ZERO;
    for worker in workers {
        load_cpu += worker.join().unwrap().1;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(libc::RUSAGE_SELF).saturating_sub(cpu_before + load_cpu);
    let calls = (threads * count) as f64;
    Run {
        rate: calls / elapsed.as_secs_f64(),
        cpu_us: cpu.as_secs_f64() * 1e6 / calls,
    }
}

const ROUNDS: usize = 5;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    samples[samples.len() / 2]
}

/// `ROUNDS` rounds, each running the baseline then toolwire: each round's pair of runs.
fn rounds(mut base: impl FnMut() -> Run, mut ours: impl FnMut() -> Run) -> Vec<(Run, Run)> {
    (0..ROUNDS).map(|_| (base(), ours())).collect()
}

/// The median over `runs` of what `f` makes of each round.
fn pick(runs: &[(Run, Run)], f: impl Fn(&(Run, Run)) -> f64) -> f64 {
    median(runs.iter().map(f).collect())
}

/// [`rounds`]: the medians of each one's rate and CPU per call, and of the rounds' ratios
/// (toolwire / baseline).
fn interleaved(base: impl FnMut() -> Run, ours: impl FnMut() -> Run) -> [f64; 6] {
    let runs = rounds(base, ours);
    let pick = |f: &dyn Fn(&(Run, Run)) -> f64| pick(&runs, f);
    [
        pick(&|(b, _)| b.rate),
        pick(&|(_, o)| o.rate),
        pick(&|(b, o)| o.rate / b.rate),
        pick(&|(b, _)| b.cpu_us),
        pick(&|(_, o)| o.cpu_us),
        pick(&|(b, o)| o.cpu_us / b.cpu_us),
    ]
}

fn row(label: &str, baseline: &str, figures: [f64; 6]) {
    let [base, ours, ratio, base_cpu, ours_cpu, cpu_ratio] = figures;
    println!(
        "| {label} | {baseline} | {base:.0} | {ours:.0} | {ratio:.2}× | {base_cpu:.1} | {ours_cpu:.1} | {cpu_ratio:.2}× |"
    );
}

fn main() {
    // `cargo bench --bench server -- http` (or `stdio`): only the rows whose label has it.
    let filter = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with("--"))
        .unwrap_or_default()
        .to_lowercase();
    let wanted = |label: &str| label.to_lowercase().contains(&filter);
    let sequential = ((20_000.0 * scale()) as usize).max(200);
    let pipelined = ((100_000.0 * scale()) as usize).max(1000);
    let stdio_rows: Vec<(String, bool, usize, usize, bool)> = [
        ("`echo` method", false, sequential, 1, false),
        ("`tools/call echo` (inline)", false, sequential, 1, true),
        ("`tools/call echo` (worker pool)", true, sequential, 1, true),
        ("`echo` method", false, pipelined, WINDOW, false),
        ("`tools/call echo` (inline)", false, pipelined, WINDOW, true),
        (
            "`tools/call echo` (worker pool)",
            true,
            pipelined,
            WINDOW,
            true,
        ),
    ]
    .into_iter()
    .map(|(label, pooled, count, window, tool)| {
        let load = if window == 1 {
            "one at a time".to_owned()
        } else {
            format!("{window} in flight")
        };
        (
            format!("stdio, {label}, {load}"),
            pooled,
            count,
            window,
            tool,
        )
    })
    .filter(|(label, ..)| wanted(label))
    .collect();
    println!(
        "MCP server calls per second and server CPU µs per call: toolwire::server beside its \
         baselines (medians of {ROUNDS} interleaved rounds, {} CPUs)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| transport, load | baseline | calls/s baseline | calls/s toolwire::server | ratio | \
         CPU µs/call baseline | CPU µs/call toolwire::server | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    // The examples are built only when a stdio row is wanted.
    if !stdio_rows.is_empty() {
        let handrolled = (example("handrolled_tool_server"), &[][..]);
        let inline = (example("tool_server"), &[][..]);
        let pooled = (inline.0.clone(), &["--pooled"][..]);
        stdio_loop(&inline, 500, 1, false);
        stdio_loop(&handrolled, 500, 1, false);
        for (label, on_pool, count, window, tool) in &stdio_rows {
            let server = if *on_pool { &pooled } else { &inline };
            let figures = interleaved(
                || stdio_loop(&handrolled, *count, *window, *tool),
                || stdio_loop(server, *count, *window, *tool),
            );
            row(label, "hand-rolled tool_server", figures);
        }
    }

    let server = Server::new(ServerConfig::new("bench", "1").workers(WINDOW)).unwrap();
    let echo = |name: &str| {
        LocalTool::with_context(name, "Echoes.", json!({"type": "object"}), |_, args| {
            Ok(CallToolResult::from_text(
                args["message"].as_str().unwrap_or_default(),
            ))
        })
    };
    server.add_tool(echo("echo")).unwrap();
    server.add_tool(echo("echo_inline").inline(true)).unwrap();
    let config = HttpServerConfig::new()
        .max_connections(2 * WINDOW)
        .max_connections_per_address(2 * WINDOW);
    let http = HttpServer::bind(&server, config).unwrap();
    let (raw_url, _raw) = raw_responder();
    let calls = ((5_000.0 * scale()) as usize).max(100);
    http_loop(&http.url(), "echo", None, 200);
    http_loop(&raw_url, "echo", None, 200);
    for (tool, label) in [("echo_inline", "inline"), ("echo", "worker pool")] {
        for threads in [1, 4, WINDOW] {
            let label = format!(
                "HTTP, 2026-07-28 `tools/call` ({label}), {threads} keep-alive connection(s)"
            );
            if !wanted(&label) {
                continue;
            }
            // The same number of calls in all: fewer per connection when there are more.
            let each = (calls * 4 / threads).max(20);
            let figures = interleaved(
                || http_rate(&raw_url, tool, None, threads, each),
                || http_rate(&http.url(), tool, None, threads, each),
            );
            row(&label, "raw HTTP responder", figures);
        }
    }
    authorization_rows(&server, &http, calls, &wanted);
    http.close().unwrap();
}

/// A JWT issuer on loopback for [`Authorization::jwt`]: its RFC 8414 metadata and a JWKS
/// holding `keys`, one request per connection (fetched once, then kept as the keys' age
/// allows). Its URL.
#[cfg(feature = "oauth")]
fn issuer(keys: Vec<serde_json::Value>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({"issuer": origin, "jwks_uri": format!("{origin}/jwks")}).to_string();
    let jwks = json!({ "keys": keys }).to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let mut header = String::new();
            let _ = reader.read_line(&mut request_line);
            while reader.read_line(&mut header).unwrap_or(0) > 2 {
                header.clear();
            }
            let body = if request_line.contains("/jwks ") {
                &jwks
            } else if request_line.contains("/.well-known/oauth-authorization-server ") {
                &metadata
            } else {
                "{}"
            };
            let status = if body == "{}" {
                "404 Not Found"
            } else {
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    origin
}

/// Where [`rsa_key`] keeps its key while the benchmark runs.
fn rsa_dir() -> PathBuf {
    std::env::temp_dir().join(format!("toolwire-bench-rsa-{}", std::process::id()))
}

/// An RSA key (2048 bits) made by the `openssl` command, when there is one: its public JWK
/// (`kid` `r1`) and a signer of RS256 access tokens.
#[cfg(feature = "oauth")]
#[allow(clippy::type_complexity)]
fn rsa_key() -> Option<(serde_json::Value, Box<dyn Fn(&serde_json::Value) -> String>)> {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    let dir = rsa_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let key = dir.join("key.pem").to_str()?.to_owned();
    let openssl = |args: &[&str]| {
        let output = Command::new("openssl").args(args).output().ok()?;
        output.status.success().then_some(output.stdout)
    };
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        &key,
    ])?;
    let modulus = String::from_utf8(openssl(&["rsa", "-in", &key, "-noout", "-modulus"])?).ok()?;
    let hex = modulus.trim().strip_prefix("Modulus=")?;
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap_or(0))
        .collect();
    let jwk = json!({"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256",
                     "n": URL_SAFE_NO_PAD.encode(&n), "e": "AQAB"});
    let sign = move |claims: &serde_json::Value| {
        let part = |value: &serde_json::Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let header = json!({"alg": "RS256", "typ": "at+jwt", "kid": "r1"});
        let input = format!("{}.{}", part(&header), part(claims));
        let file = dir.join("input");
        std::fs::write(&file, &input).unwrap();
        let output = Command::new("openssl")
            .args(["dgst", "-sha256", "-sign", &key, "-binary"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(output.status.success(), "openssl dgst: {output:?}");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(output.stdout))
    };
    Some((jwk, Box::new(sign)))
}

/// The authorizations measured, each with the bearer token every call sends: JWT access
/// tokens (ES256, one token for every call) with the verified-token cache at its default
/// and with none (every call's signature checked), RS256 with none (when `openssl` can make
/// the key), and a static token.
fn authorizations() -> Vec<(&'static str, Authorization, String)> {
    use sha2::{Digest, Sha256};
    const RESOURCE: &str = "https://mcp.example/mcp";
    let mut cases = Vec::new();
    #[cfg(feature = "oauth")]
    {
        let key = toolwire::auth::SigningKey::generate();
        let mut jwk = key.public_jwk();
        jwk["kid"] = json!("k1");
        jwk["alg"] = json!("ES256");
        let rsa = rsa_key();
        let origin = issuer(
            [Some(jwk), rsa.as_ref().map(|(jwk, _)| jwk.clone())]
                .into_iter()
                .flatten()
                .collect(),
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = json!({"iss": origin, "sub": "ann", "client_id": "app-1", "aud": RESOURCE,
                    "scope": "mcp:tools", "iat": now, "exp": now + 3600, "jti": "j1"});
        let token = key.sign_jws(
            &json!({"alg": "ES256", "typ": "at+jwt", "kid": "k1"}),
            &claims,
        );
        // Each its own: clones of one `Authorization` share its keys and verified tokens.
        let jwt = || Authorization::jwt(RESOURCE, &origin).scopes(["mcp:tools"]);
        cases.push((
            "JWT ES256, verified-token cache (1,024)",
            jwt(),
            token.clone(),
        ));
        cases.push((
            "JWT ES256, no cache (every signature checked)",
            jwt().verified_cache(0),
            token,
        ));
        match rsa.map(|(_, sign)| sign(&claims)) {
            Some(token) => cases.push((
                "JWT RS256 (2048-bit), no cache (every signature checked)",
                jwt().verified_cache(0),
                token,
            )),
            None => println!("(no `openssl` to make an RSA key: the RS256 row is left out)"),
        }
    }
    let secret = "bench-static-token-0123456789abcdef";
    let hex: String = Sha256::digest(secret.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let tokens = StaticTokens::new()
        .with(&hex, "ann", &["mcp:tools"])
        .unwrap();
    let static_tokens = Authorization::static_tokens(RESOURCE, tokens).scopes(["mcp:tools"]);
    cases.push((
        "static token (1 in the set)",
        static_tokens,
        secret.to_owned(),
    ));
    cases
}

/// What authorization adds to a call: `HttpServer` with each of [`authorizations`] in front
/// beside `plain` (the same server without), the inline `echo`, the same calls in each round.
fn authorization_rows(
    server: &Server,
    plain: &HttpServer,
    calls: usize,
    wanted: &dyn Fn(&str) -> bool,
) {
    let cases = authorizations();
    let _ = std::fs::remove_dir_all(rsa_dir());
    let label = |name: &str, threads: usize| {
        format!("HTTP + authorization: {name}, {threads} keep-alive connection(s)")
    };
    let any = [1, WINDOW].iter().any(|threads| {
        cases
            .iter()
            .any(|(name, ..)| wanted(&label(name, *threads)))
    });
    if !any {
        return;
    }
    println!();
    println!(
        "What authorization adds to an HTTP call: `HttpServer` with it in front beside the same \
         server without, inline `echo`, `Authorization: Bearer` on every POST (medians of \
         {ROUNDS} interleaved rounds; µs/call = 1 / (calls/s); added = the median of the rounds' \
         differences)"
    );
    println!(
        "| authorization, load | calls/s without | calls/s with | ratio | µs/call added | \
         CPU µs/call without | CPU µs/call with | CPU ratio | CPU µs/call added |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let config = || {
        HttpServerConfig::new()
            .max_connections(2 * WINDOW)
            .max_connections_per_address(2 * WINDOW)
    };
    let servers: Vec<(&str, HttpServer, String)> = cases
        .into_iter()
        .map(|(name, authorization, token)| {
            let http = HttpServer::bind(server, config().authorization(authorization)).unwrap();
            // The first call fetches the issuer's keys; these warm both up.
            http_loop(&http.url(), "echo_inline", Some(&token), 200);
            (name, http, token)
        })
        .collect();
    for threads in [1, WINDOW] {
        for (name, http, token) in &servers {
            let label = label(name, threads);
            if !wanted(&label) {
                continue;
            }
            let each = (calls * 4 / threads).max(20);
            let runs = rounds(
                || http_rate(&plain.url(), "echo_inline", None, threads, each),
                || http_rate(&http.url(), "echo_inline", Some(token), threads, each),
            );
            let micros = |run: &Run| 1e6 / run.rate;
            println!(
                "| {label} | {:.0} | {:.0} | {:.2}× | {:.1} | {:.1} | {:.1} | {:.2}× | {:.1} |",
                pick(&runs, |(b, _)| b.rate),
                pick(&runs, |(_, o)| o.rate),
                pick(&runs, |(b, o)| o.rate / b.rate),
                pick(&runs, |(b, o)| micros(o) - micros(b)),
                pick(&runs, |(b, _)| b.cpu_us),
                pick(&runs, |(_, o)| o.cpu_us),
                pick(&runs, |(b, o)| o.cpu_us / b.cpu_us),
                pick(&runs, |(b, o)| o.cpu_us - b.cpu_us),
            );
        }
    }
    for (_, http, _) in servers {
        http.close().unwrap();
    }
}
