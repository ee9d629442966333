//! `list_tools` over the in-memory transport: every page in order, the page cap, the
//! repeated-cursor guard, malformed lists, and the cache with its `list_changed` invalidation
//! (even when the notification overtakes the reply).
use crate::support::mcp as support;

use std::sync::Arc;

use crossbeam_channel::{bounded, unbounded};
use serde_json::{json, Value};
use support::*;
use toolwire::transport::MemoryPeer;
use toolwire::{CallOptions, Error, McpClient, ProtocolMode};

const LIST_CHANGED: &str = "notifications/tools/list_changed";

fn expect_protocol_error<T: std::fmt::Debug>(outcome: toolwire::Result<T>, needle: &str) {
    match outcome {
        Err(Error::Protocol(message)) => assert!(message.contains(needle), "{message}"),
        other => panic!("expected a protocol error mentioning {needle:?}, got {other:?}"),
    }
}

/// Lists the tools on another thread while `serve` answers; returns the outcome.
fn list(
    client: &McpClient,
    peer: &MemoryPeer,
    serve: impl FnOnce(&MemoryPeer),
) -> toolwire::Result<Arc<Vec<toolwire::Tool>>> {
    exchange(peer, || client.list_tools(), serve).0
}

#[test]
fn every_page_is_followed_and_concatenated_in_order() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    // Cursors are opaque: sent back exactly as given.
    let cursor_two = "p2?x=1&y=\u{fc}";
    let cursor_three = " spaced ";
    let (tools, cursors) = exchange(
        &peer,
        || client.list_tools(),
        |peer| {
            let first = serve(
                peer,
                "tools/list",
                json!({"tools": [tool("a"), tool("b")], "nextCursor": cursor_two}),
            );
            let second = serve(
                peer,
                "tools/list",
                json!({"tools": [tool("c")], "nextCursor": cursor_three}),
            );
            let third = serve(
                peer,
                "tools/list",
                json!({"tools": [tool("d"), tool("e")], "nextCursor": null}),
            );
            [params(&first), params(&second), params(&third)]
        },
    );
    assert_eq!(names(&tools.expect("tools")), ["a", "b", "c", "d", "e"]);
    assert!(cursors[0].get("cursor").is_none(), "{:?}", cursors[0]);
    assert_eq!(cursors[1]["cursor"], cursor_two);
    assert_eq!(cursors[2]["cursor"], cursor_three);
    finish(&client, &peer);
}

#[test]
fn pages_are_capped() {
    let mut capped = config(ProtocolMode::Legacy);
    capped = capped.max_pages(3);
    let (client, peer) = connect_legacy(capped);
    let outcome = list(&client, &peer, |peer| {
        for page in 0..3 {
            serve(
                peer,
                "tools/list",
                json!({"tools": [tool(&format!("t{page}"))], "nextCursor": format!("c{page}")}),
            );
        }
    });
    expect_protocol_error(outcome, "more than 3 pages");
    // `finish` proves no fourth page was asked for.
    finish(&client, &peer);
}

#[test]
fn a_repeated_cursor_stops_the_listing() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = list(&client, &peer, |peer| {
        serve(
            peer,
            "tools/list",
            json!({"tools": [tool("a")], "nextCursor": "same"}),
        );
        serve(
            peer,
            "tools/list",
            json!({"tools": [tool("b")], "nextCursor": "same"}),
        );
    });
    expect_protocol_error(outcome, "repeated the cursor");
    finish(&client, &peer);
}

#[test]
fn a_tools_member_that_is_not_an_array_is_a_protocol_error() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = list(&client, &peer, |peer| {
        serve(peer, "tools/list", json!({"tools": {"name": "a"}}));
    });
    expect_protocol_error(outcome, "`tools` array");
    let outcome = list(&client, &peer, |peer| {
        serve(peer, "tools/list", json!({}));
    });
    expect_protocol_error(outcome, "`tools` array");
    finish(&client, &peer);
}

#[test]
fn a_tool_without_an_input_schema_is_a_protocol_error() {
    let (client, peer) = connect_legacy(config(ProtocolMode::Legacy));
    let outcome = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("good"), {"name": "bad"}]));
    });
    expect_protocol_error(outcome, "`bad` has no `inputSchema`");
    let outcome = list(&client, &peer, |peer| {
        serve_tools(peer, json!([{"name": "worse", "inputSchema": "object"}]));
    });
    expect_protocol_error(outcome, "`worse` has no `inputSchema`");
    let outcome = list(&client, &peer, |peer| {
        serve_tools(peer, json!([{"inputSchema": {"type": "object"}}]));
    });
    expect_protocol_error(outcome, "without a string `name`");
    // Nothing malformed was cached: a good list is fetched and kept.
    let tools = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("good")]));
    });
    assert_eq!(names(&tools.expect("tools")), ["good"]);
    finish(&client, &peer);
}

#[test]
fn the_list_is_cached_until_list_changed() {
    let (notified_tx, notified) = unbounded();
    let watched = config(ProtocolMode::Legacy).on_notification(move |notification| {
        let _ = notified_tx.send(notification.method.clone());
    });
    let (client, peer) = connect_legacy(watched);
    let first = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("a")]));
    })
    .expect("first list");
    // Cached: no request (`finish` would see one).
    let cached = client.list_tools().expect("cached list");
    assert!(Arc::ptr_eq(&first, &cached));

    notify(&peer, LIST_CHANGED, Value::Null);
    // The user's handler runs after the client has used the notification.
    assert_eq!(notified.recv_timeout(SOON).expect("notified"), LIST_CHANGED);
    let refetched = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("a"), tool("b")]));
    })
    .expect("refetched list");
    assert_eq!(names(&refetched), ["a", "b"]);
    assert!(Arc::ptr_eq(
        &refetched,
        &client.list_tools().expect("cached again")
    ));
    finish(&client, &peer);
}

#[test]
fn list_changed_before_the_reply_leaves_the_list_uncached() {
    let (notified_tx, notified) = unbounded();
    let watched = config(ProtocolMode::Legacy).on_notification(move |notification| {
        let _ = notified_tx.send(notification.method.clone());
    });
    let (client, peer) = connect_legacy(watched);
    let stale = list(&client, &peer, |peer| {
        let request = expect_request(peer, "tools/list");
        notify(peer, LIST_CHANGED, Value::Null);
        answer(peer, &request.id, json!({"tools": [tool("old")]}));
    })
    .expect("the list as it was");
    assert_eq!(names(&stale), ["old"]);
    assert_eq!(notified.recv_timeout(SOON).expect("notified"), LIST_CHANGED);
    let fresh = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("new")]));
    })
    .expect("refetched");
    assert_eq!(names(&fresh), ["new"]);
    assert!(Arc::ptr_eq(&fresh, &client.list_tools().expect("cached")));
    finish(&client, &peer);
}

/// The notification overtakes the reply while the dispatch thread is busy in a user handler
/// (here a slow log handler): the reply must still not be cached, because the notification
/// was received first.
#[test]
fn list_changed_before_the_reply_counts_even_while_handlers_are_busy() {
    let (release_tx, release) = bounded::<()>(1);
    let (notified_tx, notified) = unbounded();
    let busy = config(ProtocolMode::Legacy)
        .on_log(move |_| {
            let _ = release.recv_timeout(SOON);
        })
        .on_notification(move |notification| {
            let _ = notified_tx.send(notification.method.clone());
        });
    let (client, peer) = connect_legacy(busy);
    let stale = list(&client, &peer, |peer| {
        let request = expect_request(peer, "tools/list");
        notify(
            peer,
            "notifications/message",
            json!({"level": "info", "data": "busy"}),
        );
        notify(peer, LIST_CHANGED, Value::Null);
        answer(peer, &request.id, json!({"tools": [tool("old")]}));
    })
    .expect("the list as it was");
    assert_eq!(names(&stale), ["old"]);
    // The dispatch thread is still inside the log handler, yet the list must be refetched.
    let fresh = list(&client, &peer, |peer| {
        serve_tools(peer, json!([tool("new")]));
    })
    .expect("refetched");
    assert_eq!(names(&fresh), ["new"]);
    release_tx.send(()).expect("release the handler");
    assert_eq!(
        notified.recv_timeout(SOON).expect("notified"),
        "notifications/message"
    );
    assert_eq!(notified.recv_timeout(SOON).expect("notified"), LIST_CHANGED);
    // The late handling of the old notification does not throw away the fresh list.
    assert!(Arc::ptr_eq(&fresh, &client.list_tools().expect("cached")));
    finish(&client, &peer);
}

#[test]
fn list_changed_drops_the_output_schemas_learned_from_the_old_list() {
    let (notified_tx, notified) = unbounded();
    let watched = config(ProtocolMode::Legacy).on_notification(move |notification| {
        let _ = notified_tx.send(notification.method.clone());
    });
    let (client, peer) = connect_legacy(watched);
    let call = |structured: Value| {
        move |peer: &MemoryPeer| {
            serve(
                peer,
                "tools/call",
                json!({"content": [], "structuredContent": structured}),
            );
        }
    };
    let (first, _) = exchange(
        &peer,
        || client.call_tool_with("add", json!({}), CallOptions::new()),
        |peer| {
            call(json!({"sum": 3}))(peer);
            serve_tools(peer, json!([add_tool()]));
        },
    );
    first.expect("valid under the first schema");

    // The server changes `add` to return `total` and says so.
    notify(&peer, LIST_CHANGED, Value::Null);
    assert_eq!(notified.recv_timeout(SOON).expect("notified"), LIST_CHANGED);
    let mut changed = add_tool();
    changed["outputSchema"] = json!({"type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}});
    let (second, _) = exchange(
        &peer,
        || client.call_tool_with("add", json!({}), CallOptions::new()),
        |peer| {
            call(json!({"total": 3}))(peer);
            serve_tools(peer, json!([changed]));
        },
    );
    second.expect("valid under the new schema");
    finish(&client, &peer);
}
