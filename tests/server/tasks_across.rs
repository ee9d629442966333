//! Two servers in one process sharing one store that says it is shared (a `MemoryStore`
//! behind it), as instances behind a load balancer share Redis: a task created on one is
//! read, released, answered and cancelled through the other (the owner's handler sees the
//! cancel), and a task whose owner's lease is gone is failed by the other, with its
//! handler's late outcome dropped. `shared_state.rs` does the same across processes on a
//! real Redis.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolwire::server::{Deliver, MemoryStore, ServerConfig, StateStore, StoreError};

use super::tasks::{call, create, eventually, get, server_with, with_tasks};
use crate::support::server::{memory_client, LONG};

/// A [`MemoryStore`] that says it is shared.
struct Shared(MemoryStore);

impl StateStore for Shared {
    fn shared(&self) -> bool {
        true
    }
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.get(key)
    }
    fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        self.0.put(key, value, ttl)
    }
    fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        self.0.swap(key, expected, value, ttl)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.delete(key)
    }
    fn count(&self, key: &str, window: Duration) -> Result<(u64, Duration), StoreError> {
        self.0.count(key, window)
    }
    fn uncount(&self, key: &str) -> Result<(), StoreError> {
        self.0.uncount(key)
    }
    fn publish(&self, channel: &str, message: &[u8]) -> Result<(), StoreError> {
        self.0.publish(channel, message)
    }
    fn subscribe(&self, channel: &str, deliver: Deliver) -> Result<(), StoreError> {
        self.0.subscribe(channel, deliver)
    }
}

#[test]
fn a_task_created_on_one_server_is_released_answered_and_cancelled_through_another() {
    let store: Arc<dyn StateStore> = Arc::new(Shared(MemoryStore::new()));
    let config = || ServerConfig::new("tasks", "1.0").state_store(Arc::clone(&store));
    let (a, release_a, cancels_a) = server_with(config());
    let (b, _release_b, _cancels_b) = server_with(config());
    let (to_a, connection_a) = memory_client(&a);
    let (to_b, connection_b) = memory_client(&b);

    let id = create(&to_a, "gated");
    assert_eq!(get(&to_b, &id)["status"], "working");
    release_a.send(()).unwrap();
    let done = eventually(&to_b, &id, |task| task["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert_eq!(
        (a.tasks_held(), b.tasks_held()),
        (1, 0),
        "A runs and holds it"
    );

    // Asked on A, answered on B: A runs the next round with both answers.
    let id = create(&to_a, "two_questions");
    eventually(&to_b, &id, |task| task["status"] == "input_required");
    call(
        &to_b,
        with_tasks(),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {
            "first": {"action": "accept", "content": {"v": 1}},
            "second": {"action": "accept", "content": {"v": 2}}}}),
    )
    .unwrap();
    let done = eventually(&to_a, &id, |task| task["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "1 and 2", "{done}");

    // Cancelled on B: A's handler sees its cancel flag.
    let id = create(&to_a, "gated");
    call(&to_b, with_tasks(), "tasks/cancel", json!({"taskId": id})).unwrap();
    cancels_a
        .recv_timeout(LONG)
        .expect("A's handler never saw the cancel made on B");
    assert_eq!(get(&to_a, &id)["status"], "cancelled");

    to_a.close().unwrap();
    to_b.close().unwrap();
    connection_a.wait();
    connection_b.wait();
}

#[test]
fn a_task_whose_owners_lease_is_gone_is_failed_by_another_and_never_completed_late() {
    let store = Arc::new(Shared(MemoryStore::new()));
    let shared: Arc<dyn StateStore> = store.clone();
    // A lease long enough that its renewal never comes within the test.
    let config = || {
        ServerConfig::new("tasks", "1.0")
            .state_store(Arc::clone(&shared))
            .task_lease(Duration::from_secs(3600))
    };
    let (a, release_a, _) = server_with(config());
    let (b, _, _) = server_with(config());
    let (to_a, connection_a) = memory_client(&a);
    let (to_b, connection_b) = memory_client(&b);
    let id = create(&to_a, "gated");
    assert_eq!(get(&to_b, &id)["status"], "working", "the lease holds");
    // The owner's lease passes (as when its instance dies and stops renewing it).
    store.delete(&format!("lease:{id}")).unwrap();
    let failed = get(&to_b, &id);
    assert_eq!(failed["status"], "failed", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("lease of 3600s passed") && message.contains("not run again"),
        "{failed}"
    );
    // The handler, released now, finishes late: its outcome is dropped.
    release_a.send(()).unwrap();
    assert!(
        crate::support::eventually(LONG, || a.busy_workers() == 0),
        "A's handler never returned"
    );
    assert_eq!(get(&to_a, &id)["status"], "failed");
    to_a.close().unwrap();
    to_b.close().unwrap();
    connection_a.wait();
    connection_b.wait();
}
