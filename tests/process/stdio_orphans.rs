//! No orphans when the host dies: on Linux each stdio child gets SIGKILL when its host
//! process dies, even by SIGKILL; and because children are started from a thread that lives
//! as long as the process, a short-lived thread of the user's never takes its servers with it.
#![cfg(target_os = "linux")]

use crate::support as common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use toolwire::transport::StdioTransport;
use toolwire::{Client, StdioConfig};

const HOST_ENV: &str = "TOOLWIRE_ORPHAN_TEST_HOST";

/// Run as a child of the test (see `host_of`): starts a server that ignores the end of its
/// stdin, prints the server's pid, and waits to be killed.
#[test]
fn orphan_test_host() {
    let _serial = crate::support::serial();
    let Ok(mode) = std::env::var(HOST_ENV) else {
        return; // An ordinary test run: nothing to do here.
    };
    let config = StdioConfig::new("sleep")
        .arg("600")
        .kill_on_parent_death(mode == "kill");
    let transport = StdioTransport::spawn(config).expect("spawn");
    println!("SERVER_PID={}", transport.pid());
    // Keep the transport alive until the parent kills this process.
    loop {
        std::thread::sleep(Duration::from_secs(3600));
        let _ = &transport;
    }
}

/// Starts this test binary as a host process and returns it with its server's pid.
fn host_of(mode: &str) -> (std::process::Child, u32) {
    let mut host = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            crate::support::test_name(module_path!(), "orphan_test_host").as_str(),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOST_ENV, mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the host");
    let stdout = host.stdout.take().expect("piped");
    let pid = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // libtest's own "test orphan_test_host ... " may share the line.
        .find_map(|line| {
            line.split_once("SERVER_PID=")
                .map(|(_, pid)| pid.trim().to_owned())
        })
        .expect("the host printed its server's pid")
        .parse()
        .expect("a pid");
    (host, pid)
}

#[test]
fn a_server_dies_with_a_host_killed_outright() {
    let _serial = crate::support::serial();
    let (mut host, server) = host_of("kill");
    assert!(common::process_alive(server));
    host.kill().expect("SIGKILL the host");
    host.wait().expect("reap the host");
    assert!(
        common::eventually(common::SOON, || common::process_gone(server)),
        "the server {server} outlived its host"
    );
}

#[test]
fn without_the_parent_death_signal_the_server_would_be_orphaned() {
    let _serial = crate::support::serial();
    // The control: the same host with the signal off leaves its server running.
    let (mut host, server) = host_of("keep");
    host.kill().expect("SIGKILL the host");
    host.wait().expect("reap the host");
    // A parent-death signal is sent while the parent exits, before it can be reaped: by now
    // it would be pending. None was.
    let orphaned = common::process_alive(server);
    // Clean up before asserting.
    let _ = Command::new("kill")
        .args(["-9", &server.to_string()])
        .status();
    assert!(orphaned, "the control server died: the test proves nothing");
}

#[test]
fn a_server_started_from_a_thread_that_exits_lives_on() {
    let _serial = common::serial();
    let config = common::tool_server_config(&[]);
    let client = std::thread::spawn(move || {
        let transport = StdioTransport::spawn(config).expect("spawn");
        Client::new(transport).expect("client")
    })
    .join()
    .expect("the starting thread");
    // The thread that asked for the server is gone: the server must still answer.
    let answer = client
        .call("echo", json!({"message": "still here"}))
        .expect("the server is alive");
    assert!(answer.to_string().contains("still here"), "{answer}");
    common::close_and_check(&client);
}
