//! The evaluator: one instance against a compiled schema, within a step budget and a depth
//! bound.
//!
//! Every evaluation of a (subschema, instance location) pair costs one step, and keywords
//! whose work grows with the instance (`uniqueItems`, `enum`, `const`, `pattern`) cost their
//! work too; past [`SchemaLimits::max_steps`](super::SchemaLimits::max_steps) the evaluation
//! stops and reports the budget. Evaluation recurses (it is a tree walk), so its depth is
//! bounded as well, by
//! [`SchemaLimits::max_validation_depth`](super::SchemaLimits::max_validation_depth): a
//! self-referencing schema on an instance deeper than any stack stops there, reported the same
//! way.
//!
//! Errors inside `anyOf`, `oneOf`, `not`, `if`, `contains` and `propertyNames` are not the
//! instance's errors (a failing branch may be fine), so those branches run *quiet*: they
//! return at the first failure and build no message. `unevaluatedProperties` and
//! `unevaluatedItems` need to know what the other keywords evaluated; that is collected only
//! below a node that has one of them.

use serde_json::Value;

use super::keywords::{Body, Compiled, Keyword, Keywords, NodeId};
use super::{SchemaViolation, MAX_VIOLATIONS};

/// One step of a JSON pointer into the instance.
#[derive(Debug, Clone, Copy)]
pub(super) enum Segment<'i> {
    Key(&'i str),
    Index(usize),
}

/// The path from the instance root to the location being evaluated. The first levels live in
/// the evaluator itself, so that checking a typical object allocates nothing.
pub(super) struct PathStack<'i> {
    inline: [Segment<'i>; PathStack::INLINE],
    len: usize,
    spill: Vec<Segment<'i>>,
}

impl<'i> PathStack<'i> {
    const INLINE: usize = 16;

    fn new() -> Self {
        PathStack {
            inline: [Segment::Index(0); PathStack::INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, segment: Segment<'i>) {
        if self.len < PathStack::INLINE {
            self.inline[self.len] = segment;
        } else {
            self.spill.push(segment);
        }
        self.len += 1;
    }

    #[inline]
    fn pop(&mut self) {
        self.len -= 1;
        if self.len >= PathStack::INLINE {
            self.spill.pop();
        }
    }

    /// The path as a JSON pointer.
    fn pointer(&self) -> String {
        let shown = self.len.min(PathStack::INLINE);
        let mut pointer = String::new();
        for segment in self.inline[..shown].iter().chain(&self.spill) {
            match segment {
                Segment::Key(key) => super::uri::push_token(&mut pointer, key),
                Segment::Index(index) => {
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                }
            }
        }
        pointer
    }
}

/// Why an evaluation stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhaustion {
    Steps,
    Depth,
}

/// Which properties (by position in the object) or items of one instance location some
/// keyword evaluated, for `unevaluated*`.
#[derive(Debug, Default)]
pub(super) struct Evaluated {
    all: bool,
    marks: Vec<bool>,
}

impl Evaluated {
    #[inline]
    pub(super) fn mark(&mut self, position: usize) {
        if self.all {
            return;
        }
        if self.marks.len() <= position {
            self.marks.resize(position + 1, false);
        }
        self.marks[position] = true;
    }

    pub(super) fn mark_all(&mut self) {
        self.all = true;
    }

    #[inline]
    pub(super) fn is_marked(&self, position: usize) -> bool {
        self.all || self.marks.get(position).copied().unwrap_or(false)
    }

    fn merge(&mut self, other: Evaluated) {
        if other.all {
            self.all = true;
            return;
        }
        for (position, marked) in other.marks.into_iter().enumerate() {
            if marked {
                self.mark(position);
            }
        }
    }
}

/// The state of one `Schema::validate` call.
pub(crate) struct Evaluator<'s, 'i> {
    pub(super) compiled: &'s Compiled,
    pub(super) steps_left: u64,
    pub(super) max_depth: usize,
    pub(super) depth: usize,
    pub(super) path: PathStack<'i>,
    /// The schema resources entered, outermost first (the dynamic scope).
    pub(super) scope: Vec<usize>,
    /// Greater than 0 inside a branch whose failures are not the instance's errors.
    pub(super) quiet: u32,
    pub(crate) violations: Vec<SchemaViolation>,
    pub(crate) exhausted: Option<Exhaustion>,
}

impl<'s, 'i> Evaluator<'s, 'i> {
    pub(crate) fn new(compiled: &'s Compiled, max_steps: u64, max_depth: usize) -> Self {
        Evaluator {
            compiled,
            steps_left: max_steps,
            max_depth,
            depth: 0,
            path: PathStack::new(),
            scope: Vec::new(),
            quiet: 0,
            violations: Vec::new(),
            exhausted: None,
        }
    }

    /// Validates `instance` against the root.
    pub(crate) fn run(&mut self, instance: &'i Value) -> bool {
        self.eval(self.compiled.root, instance, None)
    }

    /// After a failure: true when there is no point in going on (a quiet branch, the
    /// violation list is full, or the budget ran out).
    #[inline]
    pub(super) fn stop(&self) -> bool {
        self.exhausted.is_some() || self.quiet > 0 || self.violations.len() >= MAX_VIOLATIONS
    }

    /// Records a violation at the current path, unless quiet (then `message` is never built).
    #[cold]
    #[inline(never)]
    pub(super) fn fail(&mut self, message: impl FnOnce() -> String) {
        if self.quiet > 0 || self.exhausted.is_some() || self.violations.len() >= MAX_VIOLATIONS {
            return;
        }
        let path = self.path.pointer();
        self.violations
            .push(SchemaViolation::mismatch(path, message()));
    }

    /// Takes `work` steps from the budget; false (and the evaluation over) when there are not
    /// that many left.
    #[inline]
    pub(super) fn charge(&mut self, work: u64) -> bool {
        if self.exhausted.is_some() {
            return false;
        }
        if work > self.steps_left {
            self.steps_left = 0;
            self.exhausted = Some(Exhaustion::Steps);
            return false;
        }
        self.steps_left -= work;
        true
    }

    /// Evaluates one subschema at the current instance location. `tracker`, when given, is
    /// fresh for this call (the caller drops it if this returns false).
    pub(super) fn eval(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        tracker: Option<&mut Evaluated>,
    ) -> bool {
        if !self.charge(1) {
            return false;
        }
        let compiled = self.compiled;
        let node = &compiled.nodes[node];
        let keywords = match &node.body {
            Body::Bool(true) => return true,
            Body::Bool(false) => {
                self.fail(|| {
                    format!(
                        "False schema does not allow {}",
                        super::document::render(instance, 60)
                    )
                });
                return false;
            }
            Body::Keywords(keywords) => keywords,
        };
        if self.depth >= self.max_depth {
            self.exhausted = Some(Exhaustion::Depth);
            return false;
        }
        self.depth += 1;
        // The dynamic scope matters only to `$dynamicRef` and `$recursiveRef`; `resources`
        // is empty when the schema has neither.
        let entered = !compiled.resources.is_empty() && self.scope.last() != Some(&node.resource);
        if entered {
            self.scope.push(node.resource);
        }
        let valid = self.eval_keywords(keywords, instance, tracker);
        if entered {
            self.scope.pop();
        }
        self.depth -= 1;
        valid
    }

    fn eval_keywords(
        &mut self,
        keywords: &'s Keywords,
        instance: &'i Value,
        tracker: Option<&mut Evaluated>,
    ) -> bool {
        let mut own = Evaluated::default();
        let mut tracker = match tracker {
            Some(tracker) => Some(tracker),
            None if keywords.tracks => Some(&mut own),
            None => None,
        };
        let mut valid = true;
        for keyword in &keywords.list {
            // `type` is in most schema objects and usually passes: checked here, without a call.
            let passed = match keyword {
                Keyword::Type(types) if super::assert::type_matches(*types, instance) => true,
                _ => self.keyword(keyword, instance, &mut tracker),
            };
            if !passed {
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        valid
    }

    /// Evaluates a subschema at the same instance location, keeping what it evaluated only if
    /// it passes.
    pub(super) fn eval_in_place(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        match tracker {
            Some(tracker) => {
                let mut child = Evaluated::default();
                let valid = self.eval(node, instance, Some(&mut child));
                if valid {
                    tracker.merge(child);
                }
                valid
            }
            None => self.eval(node, instance, None),
        }
    }

    /// Evaluates a subschema at a child location.
    pub(super) fn eval_child(
        &mut self,
        node: NodeId,
        segment: Segment<'i>,
        value: &'i Value,
    ) -> bool {
        self.path.push(segment);
        let valid = self.eval(node, value, None);
        self.path.pop();
        valid
    }

    /// Runs `body` quiet: its failures build no messages and stop at once.
    pub(super) fn quietly<T>(&mut self, body: impl FnOnce(&mut Self) -> T) -> T {
        self.quiet += 1;
        let result = body(self);
        self.quiet -= 1;
        result
    }

    #[inline(never)]
    fn keyword(
        &mut self,
        keyword: &'s Keyword,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        match keyword {
            Keyword::Items { prefix, rest } => self.items(prefix, *rest, instance, tracker),
            Keyword::Contains {
                schema,
                min,
                max,
                marks,
            } => self.contains(*schema, *min, *max, *marks, instance, tracker),
            Keyword::Properties {
                named,
                nodes,
                patterns,
                additional,
            } => self.properties(named, nodes, patterns, *additional, instance, tracker),
            Keyword::PropertyNames(node) => self.property_names(*node, instance),
            Keyword::DependentSchemas(list) => {
                let Value::Object(map) = instance else {
                    return true;
                };
                let mut valid = true;
                for (name, node) in list {
                    if map.contains_key(name) && !self.eval_in_place(*node, instance, tracker) {
                        valid = false;
                        if self.stop() {
                            return false;
                        }
                    }
                }
                valid
            }
            Keyword::AllOf(list) => {
                let mut valid = true;
                for node in list {
                    if !self.eval_in_place(*node, instance, tracker) {
                        valid = false;
                        if self.stop() {
                            return false;
                        }
                    }
                }
                valid
            }
            Keyword::AnyOf(list) => {
                let collect_all = tracker.is_some();
                let mut matched = false;
                self.quietly(|this| {
                    for node in list {
                        if this.eval_in_place(*node, instance, tracker) {
                            matched = true;
                            if !collect_all {
                                break;
                            }
                        }
                        if this.exhausted.is_some() {
                            break;
                        }
                    }
                });
                if !matched {
                    self.fail(|| {
                        format!(
                            "{} is not valid under any of the schemas listed in the 'anyOf' keyword",
                            super::document::render(instance, 60)
                        )
                    });
                }
                matched
            }
            Keyword::OneOf(list) => {
                let mut matched = 0;
                self.quietly(|this| {
                    for node in list {
                        if this.eval_in_place(*node, instance, tracker) {
                            matched += 1;
                            if matched > 1 {
                                break;
                            }
                        }
                        if this.exhausted.is_some() {
                            break;
                        }
                    }
                });
                match matched {
                    1 => true,
                    0 => {
                        self.fail(|| {
                            format!(
                                "{} is not valid under any of the schemas listed in the 'oneOf' keyword",
                                super::document::render(instance, 60)
                            )
                        });
                        false
                    }
                    _ => {
                        self.fail(|| {
                            format!(
                                "{} is valid under more than one of the schemas listed in the 'oneOf' keyword",
                                super::document::render(instance, 60)
                            )
                        });
                        false
                    }
                }
            }
            Keyword::Not(node) => {
                let matched = self.quietly(|this| this.eval(*node, instance, None));
                if matched && self.exhausted.is_none() {
                    self.fail(|| {
                        format!(
                            "{} must not be valid under the schema in 'not'",
                            super::document::render(instance, 60)
                        )
                    });
                    return false;
                }
                self.exhausted.is_none()
            }
            Keyword::Conditional {
                condition,
                then,
                otherwise,
            } => {
                let holds = self.quietly(|this| this.eval_in_place(*condition, instance, tracker));
                if self.exhausted.is_some() {
                    return false;
                }
                match (holds, then, otherwise) {
                    (true, Some(node), _) | (false, _, Some(node)) => {
                        self.eval_in_place(*node, instance, tracker)
                    }
                    _ => true,
                }
            }
            Keyword::Ref(node) => self.eval_in_place(*node, instance, tracker),
            Keyword::DynamicRef { target, anchor } => {
                let compiled = self.compiled;
                let node = match anchor {
                    Some(anchor) => self
                        .scope
                        .iter()
                        .find_map(|&resource| compiled.resources.get(resource)?.dynamic.get(anchor))
                        .copied()
                        .unwrap_or(*target),
                    None => *target,
                };
                self.eval_in_place(node, instance, tracker)
            }
            Keyword::RecursiveRef { target } => {
                let compiled = self.compiled;
                let target_resource = compiled.nodes[*target].resource;
                let dynamic = compiled
                    .resources
                    .get(target_resource)
                    .is_some_and(|resource| resource.recursive.is_some());
                let node = if dynamic {
                    self.scope
                        .iter()
                        .find_map(|&resource| compiled.resources.get(resource)?.recursive)
                        .unwrap_or(*target)
                } else {
                    *target
                };
                self.eval_in_place(node, instance, tracker)
            }
            Keyword::UnevaluatedItems(node) => self.unevaluated_items(*node, instance, tracker),
            Keyword::UnevaluatedProperties(node) => {
                self.unevaluated_properties(*node, instance, tracker)
            }
            assertion => self.assertion(assertion, instance),
        }
    }
}
