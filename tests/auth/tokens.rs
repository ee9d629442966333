//! Where tokens live: the file store (mode 0600 in a 0700 folder, keyed by resource, issuer
//! and client, a broken file read as empty), tokens found again by a later provider (a new
//! process) without asking anyone, and `logout`.
#![cfg(feature = "oauth")]

use crate::support::auth_fake;

use std::sync::Arc;

use auth_fake::{connect, provider, FakeAuth, Options};
use toolwire::auth::{
    FileTokenStore, NonInteractive, OAuth, OAuthConfig, TokenKey, TokenSet, TokenStore,
};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toolwire-auth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_file_store_is_private_keyed_and_survives_a_broken_file() {
    let dir = scratch("store");
    let path = dir.join("nested").join("tokens.json");
    let store = FileTokenStore::new(&path);
    let key = |client: &str| TokenKey {
        resource: "http://h/mcp".into(),
        issuer: "http://as".into(),
        client_id: client.into(),
    };
    let tokens = TokenSet {
        access_token: "at".into(),
        token_type: "Bearer".into(),
        expires_at: Some(10),
        ..TokenSet::default()
    };
    store.save(&key("a"), &tokens).unwrap();
    assert_eq!(store.load(&key("a")).unwrap(), Some(tokens.clone()));
    assert_eq!(
        store.load(&key("b")).unwrap(),
        None,
        "another client, another key"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
    std::fs::write(&path, "{ not json").unwrap();
    assert_eq!(
        store.load(&key("a")).unwrap(),
        None,
        "a broken file is an empty store"
    );
    store.save(&key("a"), &tokens).unwrap();
    assert_eq!(store.keys().unwrap(), vec![key("a")]);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_later_process_finds_the_token_and_logout_forgets_it() {
    let dir = scratch("later");
    let path = dir.join("tokens.json");
    let fake = FakeAuth::start(Options {
        issue_refresh: true,
        ..Options::default()
    });
    let first = provider(
        &fake,
        OAuthConfig::default().store(Arc::new(FileTokenStore::new(&path))),
    );
    connect(&fake, &first).expect("authorized").close().unwrap();
    assert_eq!(fake.authorizations(), 1);

    // A new provider that cannot ask anyone: the stored token serves it.
    let never = || {
        OAuthConfig::default()
            .store(Arc::new(FileTokenStore::new(&path)))
            .authorizer(Arc::new(NonInteractive::default()))
    };
    let second = Arc::new(OAuth::new(fake.url.clone(), never()).unwrap());
    assert!(second.status().authorized, "loaded before any request");
    let client = connect(&fake, &second).expect("the stored token works");
    client.list_tools().unwrap();
    client.close().unwrap();
    assert_eq!(fake.authorizations(), 1);

    // Revoked: the stored refresh token (and registration) are used, still without a user.
    fake.revoke_all();
    let third = Arc::new(OAuth::new(fake.url.clone(), never()).unwrap());
    let client = connect(&fake, &third).expect("refreshed from the store");
    client.close().unwrap();
    assert_eq!(fake.authorizations(), 1);
    assert_eq!(fake.registrations(), 1);

    assert_eq!(third.logout().unwrap(), 1);
    assert!(!third.status().authorized);
    let fourth = Arc::new(OAuth::new(fake.url.clone(), never()).unwrap());
    let error = connect(&fake, &fourth).expect_err("logged out");
    assert_eq!(
        error.auth().unwrap().kind,
        toolwire::error::AuthErrorKind::LoginRequired
    );
    let _ = std::fs::remove_dir_all(dir);
}
