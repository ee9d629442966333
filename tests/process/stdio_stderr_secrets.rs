//! The values of the variables set for a stdio server never come back through its stderr: a
//! server that prints the token it was given, then dies, leaves a `Closed` error whose
//! stderr tail shows `***` where the token was.
#![cfg(unix)]

use toolwire::{Client, ClientConfig, Error, StdioConfig};

const TOKEN: &str = "ghp_PLANTED_TOKEN_42";

#[test]
fn a_token_the_server_prints_is_masked_in_the_closed_error() {
    let _serial = crate::support::serial();
    let config = StdioConfig::new("sh")
        .args([
            "-c",
            "echo \"auth failed for token $GITHUB_TOKEN\" >&2; exec 1>&-; sleep 0.2; exit 3",
        ])
        .env("GITHUB_TOKEN", TOKEN);
    let transport = toolwire::transport::StdioTransport::spawn(config).expect("start sh");
    let client = Client::with_config(transport, ClientConfig::default()).expect("a client");
    let error = client
        .call("ping", serde_json::json!({}))
        .expect_err("the server is gone");
    let Error::Closed(closed) = &error else {
        panic!("expected Closed, got {error}");
    };
    assert!(
        closed.stderr_tail.contains("auth failed for token ***"),
        "{:?}",
        closed.stderr_tail
    );
    assert!(!error.to_string().contains(TOKEN), "{error}");
    assert!(!closed.stderr_tail.contains(TOKEN));
    let _ = client.close();
}
