//! The compiled form of a schema: an arena of nodes, one per subschema location of the
//! document that can be reached, whose keywords name other nodes by index. A `$ref` is an
//! index like any other, so cycles cost nothing to hold and a location is compiled once
//! however many references point at it.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::{Number, Value};

use super::names::NameIndex;
use super::value::Num;

/// The index of a node in [`Compiled::nodes`].
pub(crate) type NodeId = usize;

/// A whole compiled schema document.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
    /// Per schema resource (by index): the nodes of its `$dynamicAnchor`s by name, and the
    /// node of its root if it says `"$recursiveAnchor": true`.
    pub(crate) resources: Vec<ResourceAnchors>,
}

/// The dynamic anchors of one schema resource.
#[derive(Debug, Default)]
pub(crate) struct ResourceAnchors {
    pub(crate) dynamic: HashMap<String, NodeId>,
    pub(crate) recursive: Option<NodeId>,
}

/// One subschema.
#[derive(Debug)]
pub(crate) struct Node {
    /// The schema resource the subschema belongs to (for the dynamic scope).
    pub(crate) resource: usize,
    pub(crate) body: Body,
}

/// What a subschema says.
#[derive(Debug)]
pub(crate) enum Body {
    /// `true` accepts everything, `false` nothing.
    Bool(bool),
    /// The keywords of a schema object, `unevaluated*` last.
    Keywords(Keywords),
}

/// The keywords of one schema object.
#[derive(Debug)]
pub(crate) struct Keywords {
    pub(crate) list: Vec<Keyword>,
    /// True when `unevaluatedProperties`/`unevaluatedItems` is among them: the node then
    /// collects which properties and items its other keywords evaluated.
    pub(crate) tracks: bool,
}

/// The JSON types a `type` keyword allows, as bits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TypeSet {
    pub(crate) bits: u8,
    /// Draft 6 and later: a float with no fraction (1.0) is an `integer`.
    pub(crate) floats_are_integers: bool,
}

impl TypeSet {
    pub(crate) const NULL: u8 = 1;
    pub(crate) const BOOLEAN: u8 = 2;
    pub(crate) const OBJECT: u8 = 4;
    pub(crate) const ARRAY: u8 = 8;
    pub(crate) const NUMBER: u8 = 16;
    pub(crate) const STRING: u8 = 32;
    pub(crate) const INTEGER: u8 = 64;

    /// The bit of a type name, or `None` for a name that is no JSON Schema type.
    pub(crate) fn bit(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "integer" => Self::INTEGER,
            _ => return None,
        })
    }

    /// The names of the types in the set, in a fixed order.
    pub(crate) fn names(self) -> Vec<&'static str> {
        [
            (Self::NULL, "null"),
            (Self::BOOLEAN, "boolean"),
            (Self::OBJECT, "object"),
            (Self::ARRAY, "array"),
            (Self::NUMBER, "number"),
            (Self::STRING, "string"),
            (Self::INTEGER, "integer"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.bits & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// A compiled `pattern`, kept with its source for messages. Shared between the keywords that
/// use the same source.
#[derive(Debug)]
pub(crate) struct Pattern {
    pub(crate) regex: Regex,
    pub(crate) source: String,
}

/// A numeric bound with the number as written (for messages).
#[derive(Debug)]
pub(crate) struct Bound {
    pub(crate) limit: Num,
    pub(crate) written: Number,
}

/// An `enum`'s values. Past a few values they are also found by hash, so a huge `enum` costs
/// the same per check as a small one.
#[derive(Debug)]
pub(crate) struct EnumValues {
    pub(crate) values: Vec<Value>,
    /// Hash to the indexes of the values with that hash; empty for a short list.
    pub(crate) by_hash: HashMap<u64, Vec<usize>>,
}

/// One keyword (or a group of keywords that are read together).
#[derive(Debug)]
pub(crate) enum Keyword {
    Type(TypeSet),
    Enum(Box<EnumValues>),
    Const(Box<Value>),
    Minimum(Bound),
    ExclusiveMinimum(Bound),
    Maximum(Bound),
    ExclusiveMaximum(Bound),
    MultipleOf(Bound),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Arc<Pattern>),
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    /// `prefixItems` + `items` (2020-12), or `items` as an array + `additionalItems`, or
    /// `items` as one schema (`rest` only).
    Items {
        prefix: Vec<NodeId>,
        rest: Option<NodeId>,
    },
    /// `contains` with `minContains`/`maxContains`; `marks` when the matched items count as
    /// evaluated for `unevaluatedItems` (2020-12).
    Contains {
        schema: NodeId,
        min: u64,
        max: Option<u64>,
        marks: bool,
    },
    MinProperties(u64),
    MaxProperties(u64),
    /// `required`: the names without repeats, in schema order, and indexed.
    Required {
        names: Vec<String>,
        index: NameIndex,
    },
    /// `properties` (the names indexed, `nodes` by the same positions), `patternProperties`
    /// and `additionalProperties`.
    Properties {
        named: NameIndex,
        nodes: Vec<NodeId>,
        patterns: Vec<(Arc<Pattern>, NodeId)>,
        additional: Option<NodeId>,
    },
    PropertyNames(NodeId),
    /// `dependentRequired`, or the array form of `dependencies`.
    DependentRequired(Vec<(String, Vec<String>)>),
    /// `dependentSchemas`, or the schema form of `dependencies`.
    DependentSchemas(Vec<(String, NodeId)>),
    AllOf(Vec<NodeId>),
    AnyOf(Vec<NodeId>),
    OneOf(Vec<NodeId>),
    Not(NodeId),
    Conditional {
        condition: NodeId,
        then: Option<NodeId>,
        otherwise: Option<NodeId>,
    },
    Ref(NodeId),
    /// `$dynamicRef`: `anchor` is set when the static target is a `$dynamicAnchor` of that
    /// name, and then the outermost resource in the dynamic scope with that anchor wins.
    DynamicRef {
        target: NodeId,
        anchor: Option<String>,
    },
    /// `$recursiveRef` (2019-09): `target` is its resource's root; if that root says
    /// `"$recursiveAnchor": true`, the outermost such resource in the dynamic scope wins.
    RecursiveRef {
        target: NodeId,
    },
    UnevaluatedItems(NodeId),
    UnevaluatedProperties(NodeId),
}

impl Keyword {
    /// The nodes this keyword may evaluate, for the expansion count. Dynamic references count
    /// every node they could land on.
    pub(crate) fn children(&self, compiled_resources: &[ResourceAnchors], out: &mut Vec<NodeId>) {
        match self {
            Keyword::Items { prefix, rest } => {
                out.extend(prefix);
                out.extend(rest);
            }
            Keyword::Contains { schema, .. } => out.push(*schema),
            Keyword::Properties {
                nodes,
                patterns,
                additional,
                ..
            } => {
                out.extend(nodes);
                out.extend(patterns.iter().map(|(_, node)| *node));
                out.extend(additional);
            }
            Keyword::PropertyNames(node)
            | Keyword::Not(node)
            | Keyword::Ref(node)
            | Keyword::UnevaluatedItems(node)
            | Keyword::UnevaluatedProperties(node) => out.push(*node),
            Keyword::DependentSchemas(list) => out.extend(list.iter().map(|(_, node)| *node)),
            Keyword::AllOf(list) | Keyword::AnyOf(list) | Keyword::OneOf(list) => {
                out.extend(list);
            }
            Keyword::Conditional {
                condition,
                then,
                otherwise,
            } => {
                out.push(*condition);
                out.extend(then);
                out.extend(otherwise);
            }
            Keyword::DynamicRef { target, anchor } => {
                out.push(*target);
                if let Some(anchor) = anchor {
                    out.extend(
                        compiled_resources
                            .iter()
                            .filter_map(|resource| resource.dynamic.get(anchor)),
                    );
                }
            }
            Keyword::RecursiveRef { target } => {
                out.push(*target);
                out.extend(
                    compiled_resources
                        .iter()
                        .filter_map(|resource| resource.recursive),
                );
            }
            _ => {}
        }
    }
}
