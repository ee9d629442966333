//! An MCP server that needs a login, with its own authorization server, on one loopback port:
//! something to try `toolwire login` against in a minute, with no account anywhere.
//!
//! ```text
//! cargo run --example auth_server --features oauth
//! toolwire --url http://127.0.0.1:PORT/mcp login          # in another terminal
//! toolwire --url http://127.0.0.1:PORT/mcp info           # authorized as newcomer@example.com
//! toolwire --url http://127.0.0.1:PORT/mcp call echo text=hi
//! ```
//!
//! It is the authorization server the tests use (`tests/support/auth_fake.rs`, as in
//! `examples/oauth_login.rs`): protected resource metadata, authorization server metadata,
//! dynamic client registration, an authorization endpoint that consents at once (it redirects
//! your browser straight back to toolwire's loopback listener: there is no page to click),
//! a token endpoint that checks PKCE, and refresh tokens. The MCP endpoint answers 401 until
//! a request carries a token it issued, then serves one tool, `echo` (it answers `done`). Tokens last an hour and
//! live in this process only: restart it and `toolwire login` again.
//!
//! It prints `listening on URL` first, then what to try on stderr, and serves until its stdin
//! ends (Ctrl-D) or Ctrl-C.

#[path = "../tests/support/auth_fake.rs"]
mod auth_fake;
#[path = "../tests/support/http_fake.rs"]
mod http_fake;

use std::io::{Read, Write};

fn main() {
    let server = auth_fake::FakeAuth::start(auth_fake::Options {
        issue_refresh: true,
        user: Some("newcomer@example.com"),
        ..auth_fake::Options::default()
    });
    let url = &server.url;
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "listening on {url}");
    let _ = stdout.flush();
    eprintln!(
        "An MCP server that needs a login, and its authorization server. Try, in another terminal:\n\
         \x20 toolwire --url {url} login      (the browser comes straight back: no page to click;\n\
         \x20                                  add --no-browser to open the printed address yourself)\n\
         \x20 toolwire --url {url} info\n\
         \x20 toolwire --url {url} call echo text=hi\n\
         Stop with Ctrl-D or Ctrl-C."
    );
    // Serve until stdin ends; the listener's threads go with the process.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    eprintln!(
        "stopped after {} login(s) and {} token request(s)",
        server.authorizations(),
        server.token_requests()
    );
}
