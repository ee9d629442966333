//! The keywords that look at one kind of instance: arrays (`items`, `contains`,
//! `unevaluatedItems`), objects (`properties` and its group, `propertyNames`,
//! `unevaluatedProperties`), and the plain assertions (`type`, `enum`, bounds, lengths,
//! `pattern`, `required`, …). Each passes an instance of another type, as the specification
//! says.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::Value;

use super::document::render;
use super::keywords::{Body, Bound, EnumValues, Keyword, NodeId, Pattern, TypeSet};
use super::names::NameIndex;
use super::validate::{Evaluated, Evaluator, Segment};
use super::value::{self, Num};

/// Characters of an instance shown in a message.
const SHOWN: usize = 60;

/// A `pattern` on a long string costs one more step per this many bytes.
const PATTERN_BYTES_PER_STEP: usize = 1024;

fn plural(count: u64, one: &str, many: &str) -> String {
    if count == 1 {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

/// `'a', 'b' were unexpected` / `'a' was unexpected`, at most ten names.
fn unexpected(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(10).cloned().collect();
    let more = if names.len() > 10 {
        format!(" and {} more", names.len() - 10)
    } else {
        String::new()
    };
    let verb = if names.len() == 1 { "was" } else { "were" };
    format!("{}{more} {verb} unexpected", shown.join(", "))
}

/// An `enum`'s values for a message: `"a", "b" or "c"`; past ten, the first nine and how
/// many more.
fn options(values: &[Value]) -> String {
    let shown: Vec<String> = values
        .iter()
        .take(10)
        .map(|option| render(option, 30))
        .collect();
    if values.len() > 10 {
        format!(
            "{} or {} other values",
            shown[..9].join(", "),
            values.len() - 9
        )
    } else if let Some((last, rest)) = shown.split_last().filter(|(_, rest)| !rest.is_empty()) {
        format!("{} or {last}", rest.join(", "))
    } else {
        shown.join("")
    }
}

/// True when `instance` is of one of the `types`.
#[inline]
pub(super) fn type_matches(types: TypeSet, instance: &Value) -> bool {
    let bits = types.bits;
    match instance {
        Value::Null => bits & TypeSet::NULL != 0,
        Value::Bool(_) => bits & TypeSet::BOOLEAN != 0,
        Value::Object(_) => bits & TypeSet::OBJECT != 0,
        Value::Array(_) => bits & TypeSet::ARRAY != 0,
        Value::String(_) => bits & TypeSet::STRING != 0,
        Value::Number(number) => {
            bits & TypeSet::NUMBER != 0
                || (bits & TypeSet::INTEGER != 0
                    && Num::of(number).is_integer(types.floats_are_integers))
        }
    }
}

/// True when every required name is in `map`: a small object is scanned once against the
/// index, a large one looked up name by name.
fn all_present(names: &[String], index: &NameIndex, map: &serde_json::Map<String, Value>) -> bool {
    if names.len() > map.len() {
        return false;
    }
    if map.len() > 32 {
        return names.iter().all(|name| map.contains_key(name));
    }
    map.keys().filter(|key| index.find(key).is_some()).count() == index.len()
}

impl<'s, 'i> Evaluator<'s, 'i> {
    #[inline]
    fn is_false(&self, node: NodeId) -> bool {
        matches!(self.compiled.nodes[node].body, Body::Bool(false))
    }

    pub(super) fn items(
        &mut self,
        prefix: &'s [NodeId],
        rest: Option<NodeId>,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        let Value::Array(items) = instance else {
            return true;
        };
        let mut valid = true;
        for (position, item) in items.iter().enumerate().take(prefix.len()) {
            if let Some(tracker) = tracker.as_deref_mut() {
                tracker.mark(position);
            }
            if !self.eval_child(prefix[position], Segment::Index(position), item) {
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        let Some(rest) = rest else {
            return valid;
        };
        if items.len() > prefix.len() && self.is_false(rest) {
            self.fail(|| {
                let extra: Vec<String> = items[prefix.len()..]
                    .iter()
                    .map(|item| render(item, 30))
                    .collect();
                format!("Additional items are not allowed ({})", unexpected(&extra))
            });
            return false;
        }
        for (position, item) in items.iter().enumerate().skip(prefix.len()) {
            if !self.eval_child(rest, Segment::Index(position), item) {
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        if let Some(tracker) = tracker.as_deref_mut() {
            tracker.mark_all();
        }
        valid
    }

    pub(super) fn contains(
        &mut self,
        schema: NodeId,
        min: u64,
        max: Option<u64>,
        marks: bool,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        let Value::Array(items) = instance else {
            return true;
        };
        let must_see_all = max.is_some() || (marks && tracker.is_some());
        let mut count = 0u64;
        self.quietly(|this| {
            for (position, item) in items.iter().enumerate() {
                if this.eval_child(schema, Segment::Index(position), item) {
                    count += 1;
                    if marks {
                        if let Some(tracker) = tracker.as_deref_mut() {
                            tracker.mark(position);
                        }
                    }
                    if count >= min && !must_see_all {
                        break;
                    }
                }
                if this.exhausted.is_some() {
                    break;
                }
            }
        });
        if self.exhausted.is_some() {
            return false;
        }
        if count < min {
            self.fail(|| {
                if min == 1 {
                    format!(
                        "{} does not contain an item that matches the 'contains' schema",
                        render(instance, SHOWN)
                    )
                } else {
                    format!(
                        "{} contains fewer than {} that match the 'contains' schema",
                        render(instance, SHOWN),
                        plural(min, "item", "items")
                    )
                }
            });
            return false;
        }
        if let Some(max) = max.filter(|max| count > *max) {
            self.fail(|| {
                format!(
                    "{} contains more than {} that match the 'contains' schema",
                    render(instance, SHOWN),
                    plural(max, "item", "items")
                )
            });
            return false;
        }
        true
    }

    pub(super) fn properties(
        &mut self,
        named: &'s NameIndex,
        nodes: &'s [NodeId],
        patterns: &'s [(Arc<Pattern>, NodeId)],
        additional: Option<NodeId>,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        let Value::Object(map) = instance else {
            return true;
        };
        let refuse_additional = additional.is_some_and(|node| self.is_false(node));
        let mut refused: Vec<String> = Vec::new();
        let mut valid = true;
        for (position, (key, item)) in map.iter().enumerate() {
            let mut matched = false;
            if let Some(position) = named.find(key) {
                matched = true;
                if !self.eval_child(nodes[position], Segment::Key(key), item) {
                    valid = false;
                    if self.stop() {
                        return false;
                    }
                }
            }
            for (pattern, node) in patterns {
                if pattern.regex.is_match(key) {
                    matched = true;
                    if !self.eval_child(*node, Segment::Key(key), item) {
                        valid = false;
                        if self.stop() {
                            return false;
                        }
                    }
                }
            }
            if !matched {
                if let Some(node) = additional {
                    matched = true;
                    if refuse_additional {
                        if self.quiet > 0 {
                            return false;
                        }
                        refused.push(format!("'{key}'"));
                    } else if !self.eval_child(node, Segment::Key(key), item) {
                        valid = false;
                        if self.stop() {
                            return false;
                        }
                    }
                }
            }
            if matched {
                if let Some(tracker) = tracker.as_deref_mut() {
                    tracker.mark(position);
                }
            }
        }
        if !refused.is_empty() {
            self.fail(|| {
                format!(
                    "Additional properties are not allowed ({})",
                    unexpected(&refused)
                )
            });
            return false;
        }
        valid
    }

    pub(super) fn property_names(&mut self, node: NodeId, instance: &'i Value) -> bool {
        let Value::Object(map) = instance else {
            return true;
        };
        let mut valid = true;
        for key in map.keys() {
            // The name is an instance of its own, which lives only here: a short-lived
            // evaluator with the same budget, scope and depth checks it.
            let name = Value::String(key.clone());
            let mut inner = Evaluator::new(self.compiled, self.steps_left, self.max_depth);
            inner.depth = self.depth;
            inner.scope = self.scope.clone();
            inner.quiet = 1;
            let matched = inner.eval(node, &name, None);
            self.steps_left = inner.steps_left;
            if inner.exhausted.is_some() {
                self.exhausted = inner.exhausted;
                return false;
            }
            if !matched {
                self.fail(|| {
                    format!(
                        "the property name {} does not match the 'propertyNames' schema",
                        render(&name, SHOWN)
                    )
                });
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        valid
    }

    pub(super) fn unevaluated_items(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        let Value::Array(items) = instance else {
            return true;
        };
        let Some(tracker) = tracker.as_deref_mut() else {
            return true;
        };
        let left: Vec<usize> = (0..items.len())
            .filter(|&position| !tracker.is_marked(position))
            .collect();
        if left.is_empty() {
            return true;
        }
        if self.is_false(node) {
            self.fail(|| {
                let shown: Vec<String> = left
                    .iter()
                    .map(|&position| render(&items[position], 30))
                    .collect();
                format!("Unevaluated items are not allowed ({})", unexpected(&shown))
            });
            return false;
        }
        let mut valid = true;
        for position in left {
            if !self.eval_child(node, Segment::Index(position), &items[position]) {
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        if valid {
            tracker.mark_all();
        }
        valid
    }

    pub(super) fn unevaluated_properties(
        &mut self,
        node: NodeId,
        instance: &'i Value,
        tracker: &mut Option<&mut Evaluated>,
    ) -> bool {
        let Value::Object(map) = instance else {
            return true;
        };
        let Some(tracker) = tracker.as_deref_mut() else {
            return true;
        };
        let refuse = self.is_false(node);
        let mut refused = Vec::new();
        let mut valid = true;
        for (position, (key, item)) in map.iter().enumerate() {
            if tracker.is_marked(position) {
                continue;
            }
            if refuse {
                if self.quiet > 0 {
                    return false;
                }
                refused.push(format!("'{key}'"));
            } else if !self.eval_child(node, Segment::Key(key), item) {
                valid = false;
                if self.stop() {
                    return false;
                }
            }
        }
        if !refused.is_empty() {
            self.fail(|| {
                format!(
                    "Unevaluated properties are not allowed ({})",
                    unexpected(&refused)
                )
            });
            return false;
        }
        if valid {
            tracker.mark_all();
        }
        valid
    }

    fn in_enum(&mut self, values: &EnumValues, instance: &Value) -> bool {
        let mut work = 0;
        let found = if values.by_hash.is_empty() {
            values
                .values
                .iter()
                .any(|candidate| value::equal(candidate, instance, &mut work))
        } else {
            let hash = value::hash(instance, &mut work);
            values.by_hash.get(&hash).is_some_and(|positions| {
                positions
                    .iter()
                    .any(|&position| value::equal(&values.values[position], instance, &mut work))
            })
        };
        self.charge(work) && found
    }

    fn bound(&mut self, bound: &Bound, instance: &Value, keyword: &Keyword) -> bool {
        let Value::Number(number) = instance else {
            return true;
        };
        let order = value::compare(Num::of(number), bound.limit);
        let (valid, words) = match keyword {
            Keyword::Minimum(_) => (order != Ordering::Less, "is less than the minimum of"),
            Keyword::ExclusiveMinimum(_) => (
                order == Ordering::Greater,
                "is less than or equal to the minimum of",
            ),
            Keyword::Maximum(_) => (order != Ordering::Greater, "is greater than the maximum of"),
            _ => (
                order == Ordering::Less,
                "is greater than or equal to the maximum of",
            ),
        };
        if !valid {
            self.fail(|| format!("{number} {words} {}", bound.written));
        }
        valid
    }

    /// The keywords that look at the instance alone.
    pub(super) fn assertion(&mut self, keyword: &'s Keyword, instance: &'i Value) -> bool {
        match keyword {
            Keyword::Type(types) => {
                let valid = type_matches(*types, instance);
                if !valid {
                    self.fail(|| {
                        let names = types.names();
                        if names.len() == 1 {
                            format!(
                                "{} is not of type \"{}\"",
                                render(instance, SHOWN),
                                names[0]
                            )
                        } else {
                            let quoted: Vec<String> =
                                names.iter().map(|name| format!("\"{name}\"")).collect();
                            format!(
                                "{} is not of types {}",
                                render(instance, SHOWN),
                                quoted.join(", ")
                            )
                        }
                    });
                }
                valid
            }
            Keyword::Enum(values) => {
                let valid = self.in_enum(values, instance);
                if !valid {
                    self.fail(|| {
                        format!(
                            "{} is not one of {}",
                            render(instance, SHOWN),
                            options(&values.values)
                        )
                    });
                }
                valid
            }
            Keyword::Const(expected) => {
                let mut work = 0;
                let valid = value::equal(expected, instance, &mut work);
                let valid = self.charge(work) && valid;
                if !valid {
                    self.fail(|| format!("{} was expected", render(expected, SHOWN)));
                }
                valid
            }
            Keyword::Minimum(bound)
            | Keyword::ExclusiveMinimum(bound)
            | Keyword::Maximum(bound)
            | Keyword::ExclusiveMaximum(bound) => self.bound(bound, instance, keyword),
            Keyword::MultipleOf(divisor) => {
                let Value::Number(number) = instance else {
                    return true;
                };
                let valid = value::is_multiple_of(Num::of(number), divisor.limit);
                if !valid {
                    self.fail(|| format!("{number} is not a multiple of {}", divisor.written));
                }
                valid
            }
            Keyword::MinLength(min) | Keyword::MaxLength(min) => {
                let Value::String(text) = instance else {
                    return true;
                };
                let is_min = matches!(keyword, Keyword::MinLength(_));
                // Cheap bounds first: a string has at most as many code points as bytes and
                // at least a quarter as many.
                let valid = if is_min {
                    (text.len() as u64) >= *min
                        && (text.len() as u64 / 4 >= *min || text.chars().count() as u64 >= *min)
                } else {
                    (text.len() as u64) <= *min || text.chars().count() as u64 <= *min
                };
                if !valid {
                    self.fail(|| {
                        let words = if is_min { "shorter" } else { "longer" };
                        format!(
                            "{} is {words} than {}",
                            render(instance, SHOWN),
                            plural(*min, "character", "characters")
                        )
                    });
                }
                valid
            }
            Keyword::Pattern(pattern) => {
                let Value::String(text) = instance else {
                    return true;
                };
                if !self.charge((text.len() / PATTERN_BYTES_PER_STEP) as u64) {
                    return false;
                }
                let valid = pattern.regex.is_match(text);
                if !valid {
                    self.fail(|| {
                        format!(
                            "{} does not match \"{}\"",
                            render(instance, SHOWN),
                            pattern.source
                        )
                    });
                }
                valid
            }
            Keyword::MinItems(min) | Keyword::MaxItems(min) => {
                let Value::Array(items) = instance else {
                    return true;
                };
                let is_min = matches!(keyword, Keyword::MinItems(_));
                let count = items.len() as u64;
                let valid = if is_min { count >= *min } else { count <= *min };
                if !valid {
                    self.fail(|| {
                        let words = if is_min { "fewer" } else { "more" };
                        format!(
                            "{} has {words} than {}",
                            render(instance, SHOWN),
                            plural(*min, "item", "items")
                        )
                    });
                }
                valid
            }
            Keyword::UniqueItems => {
                let Value::Array(items) = instance else {
                    return true;
                };
                let mut work = 0;
                let duplicate = value::first_duplicate(items, &mut work);
                if !self.charge(work) {
                    return false;
                }
                match duplicate {
                    None => true,
                    Some((first, second)) => {
                        self.fail(|| {
                            format!(
                                "{} has non-unique elements (items {first} and {second} are equal)",
                                render(instance, SHOWN)
                            )
                        });
                        false
                    }
                }
            }
            Keyword::MinProperties(min) | Keyword::MaxProperties(min) => {
                let Value::Object(map) = instance else {
                    return true;
                };
                let is_min = matches!(keyword, Keyword::MinProperties(_));
                let count = map.len() as u64;
                let valid = if is_min { count >= *min } else { count <= *min };
                if !valid {
                    self.fail(|| {
                        let words = if is_min { "fewer" } else { "more" };
                        format!(
                            "{} has {words} than {}",
                            render(instance, SHOWN),
                            plural(*min, "property", "properties")
                        )
                    });
                }
                valid
            }
            Keyword::Required { names, index } => {
                let Value::Object(map) = instance else {
                    return true;
                };
                if all_present(names, index, map) {
                    return true;
                }
                let mut valid = true;
                for name in names {
                    if !map.contains_key(name) {
                        valid = false;
                        self.fail(|| {
                            format!(
                                "{} is a required property",
                                render(&Value::String(name.clone()), SHOWN)
                            )
                        });
                        if self.stop() {
                            return false;
                        }
                    }
                }
                valid
            }
            Keyword::DependentRequired(list) => {
                let Value::Object(map) = instance else {
                    return true;
                };
                let mut valid = true;
                for (present, names) in list {
                    if !map.contains_key(present) {
                        continue;
                    }
                    for name in names {
                        if !map.contains_key(name) {
                            valid = false;
                            self.fail(|| {
                                format!(
                                    "{} is a required property when {} is present",
                                    render(&Value::String(name.clone()), SHOWN),
                                    render(&Value::String(present.clone()), SHOWN)
                                )
                            });
                            if self.stop() {
                                return false;
                            }
                        }
                    }
                }
                valid
            }
            // The applicators are handled by the evaluator before it gets here.
            _ => true,
        }
    }
}
