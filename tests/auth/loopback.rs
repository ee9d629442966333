//! The loopback authorizer (RFC 8252): a listener on 127.0.0.1 at a random port, the address
//! printed, stray requests ignored, the redirect taken, and a deadline that ends the wait.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use auth_fake::{connect, FakeAuth, Options};
use toolwire::auth::{AuthorizationRequest, Authorizer, LoopbackAuthorizer, OAuth, OAuthConfig};

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .build(),
    )
}

/// Plays the browser: opens the printed address, follows the server's redirect to the
/// listener, after a stray favicon request.
fn browser(notices: mpsc::Receiver<String>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let notice = notices
            .recv_timeout(Duration::from_secs(30))
            .expect("an address to open");
        let url = notice
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .expect("the address is printed")
            .to_owned();
        let agent = agent();
        let answer = agent.get(&url).call().expect("the authorization endpoint");
        let location = answer.headers()["location"].to_str().unwrap().to_owned();
        let origin: String = location.split("/callback").next().unwrap().to_owned();
        let stray = agent
            .get(&format!("{origin}/favicon.ico"))
            .call()
            .expect("the listener");
        assert_eq!(stray.status().as_u16(), 404);
        let mut page = agent.get(&location).call().expect("the listener");
        assert_eq!(page.status().as_u16(), 200);
        page.body_mut().read_to_string().unwrap()
    })
}

#[test]
fn the_loopback_listener_takes_the_redirect() {
    let fake = FakeAuth::start(Options::default());
    let (tx, notices) = mpsc::channel();
    let authorizer = LoopbackAuthorizer::new()
        .open_browser(false)
        .notice(move |text| {
            let _ = tx.send(text.to_owned());
        });
    let config = OAuthConfig::default().authorizer(Arc::new(authorizer));
    let oauth = Arc::new(OAuth::new(fake.url.clone(), config).unwrap());
    let browser = browser(notices);
    let client = connect(&fake, &oauth).expect("authorized through the listener");
    assert!(browser.join().unwrap().contains("close this tab"));
    let world = fake.world.lock().unwrap();
    let redirect = &world.authorizations[0]["redirect_uri"];
    assert!(
        redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
        "{redirect}"
    );
    assert_ne!(redirect, "http://127.0.0.1:0/callback");
    assert_eq!(
        &world.registrations[0]["redirect_uris"][0],
        redirect.as_str(),
        "the same URI registered"
    );
    drop(world);
    assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    client.close().unwrap();
}

#[test]
fn nobody_coming_back_ends_at_the_deadline_and_a_cancel_ends_it_sooner() {
    let authorizer = LoopbackAuthorizer::new().open_browser(false).notice(|_| {});
    for cancel in [false, true] {
        let uri = authorizer.redirect_uri().unwrap();
        let started = Instant::now();
        let never = || false;
        let now = || true;
        let error = authorizer
            .authorize(&AuthorizationRequest::new(
                "http://127.0.0.1:9/authorize",
                &uri,
                "state",
                Instant::now() + Duration::from_millis(300),
                if cancel { &now } else { &never },
            ))
            .expect_err("nobody came");
        let text = error.to_string();
        if cancel {
            assert!(text.contains("given up"), "{text}");
        } else {
            assert!(
                text.contains("deadline") && started.elapsed() >= Duration::from_millis(300),
                "{text}"
            );
        }
        // The listener is closed: its port refuses connections.
        let port: u16 = uri
            .rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/callback")
            .parse()
            .unwrap();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}

/// A headless authorizer whose "user" opens the printed address elsewhere and pastes back
/// what the browser ended on: the whole address, or only the code.
fn headless(paste_code_only: bool) -> toolwire::auth::HeadlessAuthorizer {
    let (tx, rx) = mpsc::channel::<String>();
    let rx = std::sync::Mutex::new(rx);
    toolwire::auth::HeadlessAuthorizer::new()
        .notice(move |text| {
            let _ = tx.send(text.to_owned());
        })
        .lines(move || {
            let notice = rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(30))
                .expect("a prompt");
            let url = notice
                .split_whitespace()
                .find(|word| word.contains("/authorize?"))
                .unwrap();
            let answer = agent().get(url).call().expect("the authorization endpoint");
            let location = answer.headers()["location"].to_str().unwrap().to_owned();
            if paste_code_only {
                let code = location
                    .split("code=")
                    .nth(1)
                    .unwrap()
                    .split('&')
                    .next()
                    .unwrap();
                Ok(format!("{code}\n"))
            } else {
                Ok(format!("{location}\n"))
            }
        })
}

#[test]
fn headless_takes_the_pasted_address_or_code() {
    for code_only in [false, true] {
        let fake = FakeAuth::start(Options {
            // A bare code comes without `iss`: only a server that does not advertise it.
            iss_supported: !code_only,
            iss: if code_only {
                auth_fake::Iss::Omit
            } else {
                auth_fake::Iss::Correct
            },
            ..Options::default()
        });
        let config = OAuthConfig::default().authorizer(Arc::new(headless(code_only)));
        let oauth = Arc::new(OAuth::new(fake.url.clone(), config).unwrap());
        let client = connect(&fake, &oauth).expect("authorized from the paste");
        assert_eq!(fake.token_requests(), 1);
        client.close().unwrap();
    }
}
