//! Requests refused together share one authorization.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use std::sync::{Arc, Barrier};

use auth_fake::{assert_idle, connect, provider, FakeAuth, Options};
use serde_json::json;
use toolwire::auth::OAuthConfig;

#[test]
fn concurrent_calls_refused_at_once_run_one_authorization() {
    let fake = FakeAuth::start(Options::default());
    let oauth = provider(&fake, OAuthConfig::default());
    let client = connect(&fake, &oauth).expect("connected");
    assert_eq!(fake.authorizations(), 1);
    fake.revoke_all();
    const CALLERS: usize = 8;
    let barrier = Arc::new(Barrier::new(CALLERS));
    let threads: Vec<_> = (0..CALLERS)
        .map(|_| {
            let client = client.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                client
                    .call_tool("echo", json!({}))
                    .map(|result| result.text())
            })
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap().expect("every call succeeds"), "done");
    }
    assert_eq!(
        fake.authorizations(),
        2,
        "one more authorization for all eight"
    );
    assert_eq!(fake.registrations(), 1);
    assert_idle(&client);
    client.close().unwrap();
}
