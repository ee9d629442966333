//! Three instances of `examples/conformance_server` sharing one `--state-key-file`, each with
//! its own `--instance-id`, behind the shipped load balancer configurations
//! (`docs/deploy/haproxy.cfg`, `docs/deploy/nginx.conf`) run by the distribution's own
//! programs on loopback ports of their own, from temporary folders (never as system
//! services). Through HAProxy (round robin, sticky on the response's `Mcp-Session-Id`): a
//! 2026-07-28 input round whose retry lands on another instance succeeds, and a
//! handshake-era session stays on its instance for its life (many requests, its GET stream,
//! a client's calls). Through nginx (a `map` on the session id's prefix): the same
//! stickiness. With one Redis shared too (`--state redis://…`): both frozen conformance
//! requirement sets, tasks included, through HAProxy. Each test adds one response header naming the instance that answered, which
//! the shipped files do not send.

use crate::support::server as support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use toolwire::{HttpConfig, McpClient, McpConfig, ProtocolMode};

use crate::support::{distribution_program, eventually, LONG};
use support::{post, stateless_headers, HttpExample, RawResponse};

/// The instances' names, as the shipped files route them.
const NAMES: [&str; 3] = ["a", "b", "c"];
/// Where the shipped files put the front and the instances.
const SHIPPED_FRONT: &str = "127.0.0.1:8080";
const SHIPPED_PORTS: [&str; 3] = ["127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"];

/// A balancer's process, ended when dropped.
struct Balancer(Child);

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    dir
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Three conformance servers with one key file; their `host:port`s.
fn instances(folder: &Path) -> (Vec<HttpExample>, Vec<String>) {
    instances_with(folder, &[])
}

/// Three conformance servers with one key file and the arguments `more`; their `host:port`s.
fn instances_with(folder: &Path, more: &[&str]) -> (Vec<HttpExample>, Vec<String>) {
    let keys = folder.join("state-keys");
    let mut key = [0u8; 32];
    for (at, byte) in key.iter_mut().enumerate() {
        *byte = (at as u8).wrapping_mul(37).wrapping_add(11);
    }
    std::fs::write(&keys, format!("{}\n", standard_base64(&key))).unwrap();
    let keys = keys.to_str().unwrap().to_owned();
    let servers: Vec<HttpExample> = NAMES
        .iter()
        .map(|name| {
            let mut args = vec![
                "--port",
                "0",
                "--until-eof",
                "--state-key-file",
                &keys,
                "--instance-id",
                name,
            ];
            args.extend_from_slice(more);
            HttpExample::start("conformance_server", &args)
        })
        .collect();
    let addrs = servers
        .iter()
        .map(|server| support::authority(&server.url).to_owned())
        .collect();
    (servers, addrs)
}

fn standard_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * index)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The shipped file `name` with the test's front and instances in place of its own.
fn shipped(name: &str, front: &str, addrs: &[String]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/deploy")
        .join(name);
    let mut text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(SHIPPED_FRONT),
        "{name} listens at {SHIPPED_FRONT}"
    );
    text = text.replace(SHIPPED_FRONT, front);
    for (shipped, addr) in SHIPPED_PORTS.iter().zip(addrs) {
        assert!(text.contains(shipped), "{name} names {shipped}");
        text = text.replace(shipped, addr);
    }
    text
}

/// Waits until the front accepts connections and `/readyz` through it is 200.
fn wait_ready(front: &str, balancer: &mut Balancer, log: &Path) {
    let ready = eventually(LONG, || {
        if let Ok(Some(status)) = balancer.0.try_wait() {
            panic!(
                "the balancer exited with {status}: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        TcpStream::connect(front).is_ok() && get(front, "/readyz").status == 200
    });
    assert!(
        ready,
        "the balancer at {front} did not become ready: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

fn get(front: &str, path: &str) -> RawResponse {
    support::exchange(
        &format!("http://{front}/mcp"),
        &format!("GET {path} HTTP/1.1\r\nHost: {front}\r\n"),
        "",
    )
}

/// HAProxy with the shipped configuration, answering with the server's name in
/// `X-Toolwire-Instance`.
fn haproxy(folder: &Path, addrs: &[String]) -> (Balancer, String) {
    let program = distribution_program("haproxy", "TOOLWIRE_HAPROXY");
    let front = format!("127.0.0.1:{}", free_port());
    let text = shipped("haproxy.cfg", &front, addrs).replace(
        "    balance roundrobin\n",
        "    balance roundrobin\n    http-response set-header X-Toolwire-Instance %[srv_name]\n",
    );
    let config = folder.join("haproxy.cfg");
    std::fs::write(&config, text).unwrap();
    let log = folder.join("haproxy.log");
    let mut balancer = Balancer(
        Command::new(&program)
            .arg("-f")
            .arg(&config)
            .arg("-db")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(folder.join("haproxy.err")).unwrap())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", program.display())),
    );
    wait_ready(&front, &mut balancer, &folder.join("haproxy.err"));
    (balancer, front)
}

/// nginx with the shipped configuration under a temporary prefix, answering with the
/// upstream's address in `X-Toolwire-Upstream`.
fn nginx(folder: &Path, addrs: &[String]) -> (Balancer, String) {
    let program = distribution_program("nginx", "TOOLWIRE_NGINX");
    let front = format!("127.0.0.1:{}", free_port());
    let text = shipped("nginx.conf", &front, addrs).replace(
        "            proxy_pass http://$mcp_backend;\n",
        "            proxy_pass http://$mcp_backend;\n            \
         add_header X-Toolwire-Upstream $upstream_addr always;\n",
    );
    let config = folder.join("nginx.conf");
    std::fs::write(&config, text).unwrap();
    let log = folder.join("error.log");
    let mut balancer = Balancer(
        Command::new(&program)
            .arg("-p")
            .arg(folder)
            .arg("-e")
            .arg(&log)
            .arg("-c")
            .arg(&config)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(folder.join("nginx.err")).unwrap())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", program.display())),
    );
    wait_ready(&front, &mut balancer, &log);
    (balancer, front)
}

/// A 2026-07-28 `tools/call` of the request-state fixture through `front`, with `extra`
/// params; the answer and the instance that gave it.
fn call_round(front: &str, extra: Value) -> (Value, String) {
    let mut params = json!({"name": "test_input_required_result_request_state",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let headers = stateless_headers(
        "tools/call",
        Some("test_input_required_result_request_state"),
    );
    let answer = post(&format!("http://{front}/mcp"), &headers, &body);
    assert_eq!(answer.status, 200, "{answer:?}");
    let instance = answer
        .header("x-toolwire-instance")
        .expect("the instance that answered")
        .to_owned();
    (answer.messages().pop().unwrap(), instance)
}

#[test]
#[ignore = "needs haproxy, the distribution's package (.ci/run installs it)"]
fn through_haproxy_a_retry_on_another_instance_succeeds_and_sessions_stay_put() {
    let folder = scratch("haproxy");
    let (_instances, addrs) = instances(&folder);
    let (_haproxy, front) = haproxy(&folder, &addrs);

    // (a) Round robin sends each retry to the next instance; the state verifies there.
    for _ in 0..3 {
        let (first, asked_by) = call_round(&front, json!({}));
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"].as_str().unwrap().to_owned();
        let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
        let retry = json!({"inputResponses": answer, "requestState": state});
        let (done, answered_by) = call_round(&front, retry);
        assert_ne!(asked_by, answered_by, "round robin moved the retry");
        let text = done["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.starts_with("state-ok"), "{done}");
    }

    // (b) A handshake-era session: every request lands on the instance that opened it.
    let url = format!("http://{front}/mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "lb", "version": "1"}}});
    let opened = post(&url, "", &init);
    assert_eq!(opened.status, 200, "{opened:?}");
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let owner = opened.header("x-toolwire-instance").unwrap().to_owned();
    assert!(
        session.starts_with(&format!("{owner}.")),
        "{session} from {owner}"
    );
    let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&url, &headers, &initialized).status, 202);
    for id in 2..32 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_simple_text", "arguments": {}}});
        let answer = post(&url, &headers, &call);
        assert_eq!(answer.status, 200, "request {id}: {answer:?}");
        assert_eq!(answer.header("x-toolwire-instance"), Some(owner.as_str()));
    }
    let (status, instance) = open_get_stream(&front, &session);
    assert_eq!((status, instance.as_deref()), (200, Some(owner.as_str())));

    // And a client of our own, with its GET stream, through the balancer for many calls.
    let config = McpConfig::default().mode(ProtocolMode::Legacy);
    let client = McpClient::connect_http(HttpConfig::new(url), config).unwrap();
    for _ in 0..30 {
        let result = client.call_tool("test_simple_text", json!({})).unwrap();
        assert!(result.text().contains("simple text"), "{}", result.text());
    }
    client.close().unwrap();
}

/// Opens a session's GET stream through `front`: its status and the instance header.
fn open_get_stream(front: &str, session: &str) -> (u16, Option<String>) {
    let stream = TcpStream::connect(front).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {front}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n"
    );
    (&stream).write_all(head.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut instance = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "x-toolwire-instance" || name == "x-toolwire-upstream" {
                instance = Some(value.trim().to_owned());
            }
        }
    }
    (status, instance)
}

#[test]
#[ignore = "needs nginx, the distribution's package (.ci/run installs it)"]
fn through_nginx_a_session_stays_on_the_instance_its_id_names() {
    let folder = scratch("nginx");
    let (_instances, addrs) = instances(&folder);
    let (_nginx, front) = nginx(&folder, &addrs);
    let url = format!("http://{front}/mcp");
    // Sessions opened round robin land on every instance; each stays on its own.
    let mut owners = Vec::new();
    for _ in 0..3 {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "lb", "version": "1"}}});
        let opened = post(&url, "", &init);
        assert_eq!(opened.status, 200, "{opened:?}");
        let session = opened.header("mcp-session-id").unwrap().to_owned();
        let upstream = opened.header("x-toolwire-upstream").unwrap().to_owned();
        let (prefix, _) = session.split_once('.').unwrap();
        let at = NAMES.iter().position(|name| *name == prefix).unwrap();
        assert_eq!(upstream, addrs[at], "{session} was opened by {upstream}");
        let headers = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
        for id in 2..22 {
            let ping = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "test_simple_text", "arguments": {}}});
            let answer = post(&url, &headers, &ping);
            assert_eq!(answer.status, 200, "request {id}: {answer:?}");
            assert_eq!(
                answer.header("x-toolwire-upstream"),
                Some(upstream.as_str())
            );
        }
        let (status, streamed_by) = open_get_stream(&front, &session);
        assert_eq!(
            (status, streamed_by.as_deref()),
            (200, Some(upstream.as_str()))
        );
        owners.push(upstream);
    }
    owners.sort();
    owners.dedup();
    assert_eq!(
        owners.len(),
        3,
        "round robin opened a session on each instance"
    );
    // A 2026-07-28 client of our own and a handshake one, each for many calls.
    for mode in [ProtocolMode::Modern, ProtocolMode::Legacy] {
        let config = McpConfig::default().mode(mode);
        let client = McpClient::connect_http(HttpConfig::new(url.clone()), config).unwrap();
        for _ in 0..20 {
            let result = client.call_tool("test_simple_text", json!({})).unwrap();
            assert!(result.text().contains("simple text"), "{}", result.text());
        }
        client.close().unwrap();
    }
}

/// Both frozen requirement sets through HAProxy in front of three instances sharing one Redis
/// (started here on a loopback port of its own, no persistence) and one key file: every scored
/// scenario, and every unscored `tasks-*` one (round robin sends a task's `tasks/get`,
/// `tasks/update` and `tasks/cancel` to instances other than the one that created it, so they
/// pass only with the tasks in the shared store).
#[cfg(feature = "redis")]
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), haproxy and redis-server"]
fn both_requirement_sets_pass_through_haproxy_with_three_instances_sharing_redis() {
    let _peers = crate::support::mcp::peers(
        "both_requirement_sets_pass_through_haproxy_with_three_instances_sharing_redis",
    );
    let dir = std::env::var("TOOLWIRE_PEERS_DIR").expect("TOOLWIRE_PEERS_DIR");
    let redis = crate::support::redis::Redis::start("haproxy-conformance");
    let folder = scratch("haproxy-conformance");
    let url = redis.url();
    let (_instances, addrs) = instances_with(&folder, &["--state", &url]);
    let (_haproxy, front) = haproxy(&folder, &addrs);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/conformance-server.sh");
    for revision in ["2025-11-25", "2026-07-28"] {
        let run = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .arg(format!("http://{front}/mcp"))
            .arg(revision)
            .stdin(Stdio::null())
            .output()
            .expect("run tests/peers/conformance-server.sh");
        let out = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{revision}: {out}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(out.contains(", 0 failed"), "{revision}: {out}");
        if revision == "2026-07-28" {
            // The script requires each unscored tasks-* scenario by name; they ran here.
            assert!(out.contains("tasks-lifecycle"), "{out}");
        }
    }
}

/// A 2026-07-28 request through `front` declaring the tasks extension: its JSON-RPC answer
/// (or the balancer's refusal as an error) and the instance that answered.
#[cfg(feature = "redis")]
fn task_request(front: &str, method: &str, name: Option<&str>, params: Value) -> (Value, String) {
    lb_request(front, method, name, params, true)
}

/// As [`task_request`], declaring the tasks extension only when `tasks`.
#[cfg(feature = "redis")]
fn lb_request(
    front: &str,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    tasks: bool,
) -> (Value, String) {
    let extensions = if tasks {
        json!({"io.modelcontextprotocol/tasks": {}})
    } else {
        json!({})
    };
    params["_meta"] = support::meta(json!({"elicitation": {}, "extensions": extensions}));
    let task = params["taskId"].as_str().map(str::to_owned);
    let name = name.or(task.as_deref());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    // A raw exchange that takes whatever comes back (a balancer's 502 page, a closed
    // connection) as the failure it is, instead of a panic.
    let attempt = std::panic::catch_unwind(|| {
        post(
            &format!("http://{front}/mcp"),
            &stateless_headers(method, name),
            &body,
        )
    });
    let Ok(response) = attempt else {
        return (
            json!({"error": {"code": 0, "message": "no answer"}}),
            String::new(),
        );
    };
    let by = response
        .header("x-toolwire-instance")
        .unwrap_or("")
        .to_owned();
    let messages = std::panic::catch_unwind(|| response.messages()).unwrap_or_default();
    let answer = messages
        .into_iter()
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| json!({"error": {"code": response.status, "message": response.body}}));
    (answer, by)
}

/// Polls `tasks/get` through `front` until the task is `status`; how long that took.
#[cfg(feature = "redis")]
fn until_task(front: &str, id: &str, status: &str) -> (Value, std::time::Duration) {
    let started = std::time::Instant::now();
    loop {
        let (answer, _) = task_request(front, "tasks/get", None, json!({"taskId": id}));
        if answer["result"]["status"] == status {
            return (answer["result"].clone(), started.elapsed());
        }
        assert!(
            started.elapsed() < LONG,
            "task {id} never became {status}: {answer}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Through HAProxy in front of three instances sharing Redis: one instance is killed
/// (SIGKILL) with calls and tasks in flight. No call waits past its deadline, the calls that
/// fail are at most those round robin gave that instance, its task ends `failed` within the
/// lease, the others' tasks complete, later calls succeed. Then Redis stops: a call that
/// needs it fails at once naming the store; once Redis is back calls succeed again.
#[cfg(feature = "redis")]
#[test]
#[ignore = "needs the MCP peers: set TOOLWIRE_PEERS_DIR (tests/peers/install.sh), haproxy and redis-server"]
fn through_haproxy_a_killed_instance_costs_only_its_own_calls_and_a_stopped_store_fails_fast() {
    use std::time::{Duration, Instant};
    let _peers = crate::support::mcp::peers(
        "through_haproxy_a_killed_instance_costs_only_its_own_calls_and_a_stopped_store_fails_fast",
    );
    let mut redis = crate::support::redis::Redis::start("haproxy-faults");
    let folder = scratch("haproxy-faults");
    let url = redis.url();
    let lease = Duration::from_millis(900);
    let (mut instances, addrs) =
        instances_with(&folder, &["--state", &url, "--task-lease-ms", "900"]);
    let (_haproxy, front) = haproxy(&folder, &addrs);
    // One task per instance (round robin), each named by the instance that took it.
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (answer, by) = task_request(
            &front,
            "tools/call",
            Some("slow_compute"),
            json!({"name": "slow_compute", "arguments": {"seconds": 3, "label": "task"}}),
        );
        assert_eq!(answer["result"]["resultType"], "task", "{answer}");
        tasks.push((answer["result"]["taskId"].as_str().unwrap().to_owned(), by));
    }
    let doomed = tasks
        .iter()
        .position(|(_, by)| by == "a")
        .expect("a task on a");
    // Six calls in flight (two per instance), each with a deadline of 10 s.
    let deadline = Duration::from_secs(10);
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let front = front.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let (answer, _) = lb_request(
                    &front,
                    "tools/call",
                    Some("slow_compute"),
                    json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "call"}}),
                    false,
                );
                (answer, started.elapsed())
            })
        })
        .collect();
    instances[0].kill();
    let killed = Instant::now();
    let mut failures = 0;
    for call in calls {
        let (answer, took) = call.join().unwrap();
        assert!(took < deadline, "a call took {took:?}: {answer}");
        if answer["result"]["content"][0]["text"] != "call: done after 1 s" {
            eprintln!("a call failed after {took:?}: {answer}");
            failures += 1;
        }
    }
    assert!(
        failures <= 2,
        "{failures} calls failed; instance a held at most 2"
    );
    // A's task fails within its lease (after the kill: its last renewal came at most a third
    // of a lease before); the others' complete.
    let (failed, _) = until_task(&front, &tasks[doomed].0, "failed");
    assert!(
        killed.elapsed() >= lease / 3 && killed.elapsed() < lease * 3 + Duration::from_secs(3),
        "{:?}",
        killed.elapsed()
    );
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("lease"), "{failed}");
    for (at, (id, _)) in tasks.iter().enumerate() {
        if at != doomed {
            let (done, _) = until_task(&front, id, "completed");
            assert_eq!(done["result"]["content"][0]["text"], "task: done after 3 s");
        }
    }
    // Later calls all succeed (a connection to the dead instance is redispatched).
    for _ in 0..6 {
        let (answer, by) = task_request(
            &front,
            "tools/call",
            Some("test_simple_text"),
            json!({"name": "test_simple_text", "arguments": {}}),
        );
        assert!(answer["result"]["content"].is_array(), "{answer}");
        assert_ne!(by, "a");
    }

    // Redis down: a call that needs it fails at once, naming the store.
    redis.stop();
    let place = format!("redis://127.0.0.1:{}/0", redis.port);
    for _ in 0..4 {
        let started = Instant::now();
        let (answer, _) = task_request(
            &front,
            "tools/call",
            Some("slow_compute"),
            json!({"name": "slow_compute", "arguments": {"seconds": 0}}),
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            text.contains("the state store failed") && text.contains(&place),
            "{answer}"
        );
    }
    redis.restart();
    let mut last = Value::Null;
    let back = eventually(LONG, || {
        last = task_request(
            &front,
            "tools/call",
            Some("slow_compute"),
            json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "back"}}),
        )
        .0;
        last["result"]["resultType"] == "task"
    });
    assert!(back, "never reached the store again: {last}");
    let id = last["result"]["taskId"].as_str().unwrap().to_owned();
    until_task(&front, &id, "completed");
}
