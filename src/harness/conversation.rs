//! A conversation (or task) of a long-lived host: the harness's workers and registry, its
//! own attempt budget and its own id in the audit.

use std::time::Instant;

use serde_json::Value;

use super::budget::{BudgetScope, BudgetState};
use super::imported::CallSettings;
use super::outcome::Outcome;
use super::shapes::{self, CallShape, MessageReply, ToolReply};
use super::Harness;
use crate::error::{Error, Result};

/// The most characters of a conversation's id.
pub const MAX_CONVERSATION_ID_CHARS: usize = 256;

/// One conversation (or task) of a [`Harness`], from [`Harness::conversation`]: the calls
/// made through it run on the harness's workers against its registry, as the harness's own
/// do, but spend the conversation's own attempt budget, and every audit event of theirs
/// carries the conversation's id ([`super::AuditEvent::scope`], `"scope"` in the
/// transcript). Unrelated conversations therefore never spend each other's budget, and a
/// long-lived host needs neither a harness per conversation nor [`Harness::reset_budget`].
///
/// Cheap to make and to clone (clones share the budget). The conversation's budget is the
/// harness's budget scope of its id ([`Harness::scope`]): the harness holds at most
/// [`super::HarnessConfig::max_budget_scopes`] of them (defaults to 1,024), forgetting the
/// one used least recently past that; a handle keeps counting into its budget while it is
/// held, and a forgotten id asked for again starts over. A handle keeps the harness alive.
#[derive(Debug, Clone)]
pub struct Conversation {
    harness: Harness,
    scope: BudgetScope,
}

impl Harness {
    /// The conversation (or task) `id`: its own attempt budget (the limit of
    /// [`super::HarnessConfig::attempt_budget`], nothing used when the id is new or was
    /// forgotten), the harness's workers and registry. The id is recorded in the audit, so it
    /// must not be a secret.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolwire::{CallShape, Harness, HarnessConfig, LocalTool, Status, ToolRegistry};
    ///
    /// let mut registry = ToolRegistry::new();
    /// registry.register(LocalTool::new("ping", "Answers pong.", json!({"type": "object"}),
    ///                                  |_args, _cancel| Ok(Some(json!("pong")))))?;
    /// let harness = Harness::new(registry, HarnessConfig::default().attempt_budget(1))?;
    /// let alice = harness.conversation("alice")?;
    /// assert_eq!(alice.call("ping", json!({})).status, Status::Ok);
    /// assert_eq!(alice.call("ping", json!({})).status, Status::Budget); // alice's is spent
    /// let bob = harness.conversation("bob")?;
    /// let message = r#"{"role": "assistant", "content": [
    ///     {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}]}"#;
    /// let reply = bob.handle_message(CallShape::Anthropic, message)?;
    /// assert_eq!(reply.replies[0].outcome.status, Status::Ok); // bob's is his own
    /// assert_eq!(harness.budget().used, 0); // the harness's own is untouched
    /// harness.close();
    /// # Ok::<(), toolwire::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an empty id or one longer than
    /// [`MAX_CONVERSATION_ID_CHARS`] characters.
    pub fn conversation(&self, id: &str) -> Result<Conversation> {
        let chars = id.chars().count();
        if chars == 0 || chars > MAX_CONVERSATION_ID_CHARS {
            return Err(Error::Config(format!(
                "a conversation id must have 1 to {MAX_CONVERSATION_ID_CHARS} characters, \
                 not {chars}"
            )));
        }
        Ok(Conversation {
            harness: self.clone(),
            scope: self.scope(id),
        })
    }
}

impl Conversation {
    /// The conversation's id.
    pub fn id(&self) -> &str {
        self.scope.key()
    }

    /// The harness it runs on.
    pub fn harness(&self) -> &Harness {
        &self.harness
    }

    /// The conversation's attempt budget as it stands.
    pub fn budget(&self) -> BudgetState {
        self.scope.state()
    }

    /// Starts the conversation's budget over: nothing used, the given limit.
    pub fn reset_budget(&self, limit: u32) {
        self.scope.reset(limit);
    }

    fn settings(&self) -> CallSettings {
        CallSettings::new().budget(self.scope.clone())
    }

    /// [`Harness::handle`] in this conversation.
    pub fn handle(&self, shape: CallShape, raw: &str) -> ToolReply {
        let mut replies = self.handle_all(shape, &[raw]);
        replies.remove(0)
    }

    /// [`Harness::handle_all`] in this conversation.
    pub fn handle_all<S: AsRef<str>>(&self, shape: CallShape, calls: &[S]) -> Vec<ToolReply> {
        self.run_all(shape, calls, None)
    }

    /// [`Harness::handle_all_until`] in this conversation.
    pub fn handle_all_until<S: AsRef<str>>(
        &self,
        shape: CallShape,
        calls: &[S],
        deadline: Instant,
    ) -> Vec<ToolReply> {
        self.run_all(shape, calls, Some(deadline))
    }

    fn run_all<S: AsRef<str>>(
        &self,
        shape: CallShape,
        calls: &[S],
        deadline: Option<Instant>,
    ) -> Vec<ToolReply> {
        let calls: Vec<&str> = calls.iter().map(AsRef::as_ref).collect();
        let inner = &self.harness.inner;
        let mut replies = inner.handle_all(shape, &calls, deadline, &self.settings());
        shapes::mark_custom(shape, &calls, &mut replies);
        replies
    }

    /// [`Harness::handle_message`] in this conversation.
    ///
    /// # Errors
    ///
    /// As [`Harness::handle_message`].
    pub fn handle_message(&self, shape: CallShape, message: &str) -> Result<MessageReply> {
        let inner = &self.harness.inner;
        inner.handle_message(shape, message, None, &self.settings())
    }

    /// [`Harness::handle_message_until`] in this conversation.
    ///
    /// # Errors
    ///
    /// As [`Harness::handle_message`].
    pub fn handle_message_until(
        &self,
        shape: CallShape,
        message: &str,
        deadline: Instant,
    ) -> Result<MessageReply> {
        let inner = &self.harness.inner;
        inner.handle_message(shape, message, Some(deadline), &self.settings())
    }

    /// [`Harness::call`] in this conversation.
    pub fn call(&self, name: &str, arguments: Value) -> Outcome {
        self.harness.call_with(name, arguments, &self.settings())
    }

    /// [`Harness::call_with`] in this conversation: `settings`' cancellation, progress and
    /// deadline apply, and the call spends the conversation's budget whatever `settings`
    /// names.
    pub fn call_with(&self, name: &str, arguments: Value, settings: &CallSettings) -> Outcome {
        let settings = settings.clone().budget(self.scope.clone());
        self.harness.call_with(name, arguments, &settings)
    }
}
