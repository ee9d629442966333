//! Calls one JSON-RPC method on any stdio server and prints the result.
//!
//! ```text
//! cargo run --example call -- [--timeout-ms N] METHOD [PARAMS_JSON] -- COMMAND [ARGS...]
//! ```
//!
//! Prints the result JSON on stdout. Exit codes:
//!
//! * 0: the call succeeded;
//! * 1: the peer answered with a JSON-RPC error (printed on stdout as the error object);
//! * 2: usage error, or the server could not be started, closed, or broke the protocol (the
//!   message is on stderr, with the tail of the server's stderr when there is one);
//! * 3: the call timed out.
//!
//! The child is always closed before exiting.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;
use toolwire::transport::StdioTransport;
use toolwire::{CallOptions, Client, Error, StdioConfig};

const USAGE: &str = "usage: call [--timeout-ms N] METHOD [PARAMS_JSON] -- COMMAND [ARGS...]";

struct Invocation {
    timeout: Duration,
    method: String,
    params: Value,
    command: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Invocation, String> {
    let split = args
        .iter()
        .position(|arg| arg == "--")
        .ok_or("missing `--` before the command")?;
    let (ours, command) = (&args[..split], &args[split + 1..]);
    if command.is_empty() {
        return Err("missing the server command after `--`".into());
    }
    let mut timeout = Duration::from_secs(30);
    let mut positional = Vec::new();
    let mut index = 0;
    while index < ours.len() {
        if ours[index] == "--timeout-ms" {
            let value = ours.get(index + 1).ok_or("--timeout-ms needs a value")?;
            let millis: u64 = value
                .parse()
                .map_err(|_| format!("bad --timeout-ms {value:?}"))?;
            timeout = Duration::from_millis(millis);
            index += 2;
        } else {
            positional.push(ours[index].clone());
            index += 1;
        }
    }
    let (method, params) = match positional.as_slice() {
        [method] => (method.clone(), Value::Null),
        [method, params] => (
            method.clone(),
            serde_json::from_str(params)
                .map_err(|error| format!("PARAMS_JSON is not JSON: {error}"))?,
        ),
        _ => return Err("expected METHOD and optionally PARAMS_JSON".into()),
    };
    Ok(Invocation {
        timeout,
        method,
        params,
        command: command.to_vec(),
    })
}

fn main() -> ExitCode {
    let invocation = match parse(std::env::args().skip(1).collect()) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("call: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = StdioConfig::new(&invocation.command[0]).args(&invocation.command[1..]);
    let client = match StdioTransport::spawn(config).and_then(Client::new) {
        Ok(client) => client,
        Err(error) => {
            eprintln!("call: {error}");
            return ExitCode::from(2);
        }
    };
    let outcome = client.call_with(
        &invocation.method,
        invocation.params,
        CallOptions::new().timeout(invocation.timeout),
    );
    if let Err(error) = client.close() {
        eprintln!("call: while closing the server: {error}");
    }
    match outcome {
        Ok(result) => {
            println!("{result}");
            ExitCode::SUCCESS
        }
        Err(Error::Rpc(error)) => {
            println!("{}", serde_json::to_string(&*error).unwrap_or_default());
            ExitCode::from(1)
        }
        Err(error @ Error::Timeout { .. }) => {
            eprintln!("call: {error}");
            ExitCode::from(3)
        }
        Err(error) => {
            eprintln!("call: {error}");
            ExitCode::from(2)
        }
    }
}
