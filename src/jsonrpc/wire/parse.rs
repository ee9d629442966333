//! The strict parser: one pass over a frame, classified by hand (see the module docs above).
//!
//! A response's `result` is kept as JSON text ([`RawValue`]) in that pass rather than built
//! into a `Value`: the one who waits for it decides. Most callers want a `Value` and get one
//! from that text; a caller that takes a large result apart item by item (an MCP list page)
//! reads the text directly, so a page never exists as a tree of `Value`s, which cost 15 to 20
//! times the text's size in memory.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{
    scan, type_name, ErrorObject, Frame, Invalid, Message, Notification, ParseError, Request,
    RequestId, Response, JSONRPC_VERSION,
};

/// A response as it arrives: the id, and the result still as JSON text (or the error object).
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The id of the request; `None` for the wire's `null`.
    pub id: Option<RequestId>,
    /// The result as compact JSON text exactly as sent, or the error object.
    pub payload: Result<Box<RawValue>, ErrorObject>,
}

impl RawResponse {
    /// The response with its result built into a `Value`.
    ///
    /// # Errors
    ///
    /// The parser's reason when the result cannot be built (nested deeper than the parser
    /// allows).
    pub fn into_response(self) -> Result<Response, serde_json::Error> {
        let payload = match self.payload {
            Ok(raw) => Ok(serde_json::from_str(raw.get())?),
            Err(error) => Err(error),
        };
        Ok(Response {
            id: self.id,
            payload,
        })
    }
}

impl PartialEq for RawResponse {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.payload, &other.payload) {
                (Ok(a), Ok(b)) => a.get() == b.get(),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

/// One message as it arrives: like [`Message`], with a response's result still as text.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response, its result as text.
    Response(RawResponse),
}

/// One frame as it arrives: like [`Frame`], with responses' results still as text.
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingFrame {
    /// A single message.
    Single(Incoming),
    /// A non-empty batch; each element parsed on its own.
    Batch(Vec<Result<Incoming, Invalid>>),
}

/// An object's members, read in one pass: every member as a `Value` except `result`, kept as
/// text.
struct Members {
    object: Map<String, Value>,
    result: Option<Box<RawValue>>,
}

/// The top of a frame: an object, an array of elements, or anything else.
enum Top {
    Object(Members),
    Array(Vec<Element>),
    Other(Value),
}

enum Element {
    Object(Members),
    Other(Value),
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut members = Members {
            object: Map::new(),
            result: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            if key == "result" {
                // A repeated member keeps the last, as the `Value` parser does.
                members.result = Some(map.next_value::<Box<RawValue>>()?);
                members.object.remove("result");
            } else {
                let value = map.next_value::<Value>()?;
                members.object.insert(key, value);
            }
        }
        Ok(members)
    }
}

/// Reads anything; objects become [`Members`], everything else a `Value`.
struct AnyVisitor<T>(std::marker::PhantomData<T>);

/// What [`AnyVisitor`] makes of an object and of any other value.
trait FromParts: Sized {
    fn object(members: Members) -> Self;
    fn other(value: Value) -> Self;
    fn array<'de, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error>;
}

impl FromParts for Element {
    fn object(members: Members) -> Self {
        Element::Object(members)
    }
    fn other(value: Value) -> Self {
        Element::Other(value)
    }
    fn array<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Element::Other(Value::Array(items)))
    }
}

impl FromParts for Top {
    fn object(members: Members) -> Self {
        Top::Object(members)
    }
    fn other(value: Value) -> Self {
        Top::Other(value)
    }
    fn array<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element_seed(Seed::<Element>::default())? {
            elements.push(element);
        }
        Ok(Top::Array(elements))
    }
}

struct Seed<T>(std::marker::PhantomData<T>);

impl<T> Default for Seed<T> {
    fn default() -> Self {
        Seed(std::marker::PhantomData)
    }
}

impl<'de, T: FromParts> DeserializeSeed<'de> for Seed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_any(AnyVisitor::<T>(std::marker::PhantomData))
    }
}

impl<'de, T: FromParts> Visitor<'de> for AnyVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        MembersVisitor.visit_map(map).map(T::object)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::array(seq)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<T, E> {
        Ok(T::other(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        Ok(T::other(Value::from(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        Ok(T::other(Value::from(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<T, E> {
        Ok(T::other(Value::from(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        Ok(T::other(Value::from(value)))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<T, E> {
        Ok(T::other(Value::String(value)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::other(Value::Null))
    }
}

/// Parses one frame (one line of stdio, one HTTP body, one SSE `data`) strictly, in one pass,
/// keeping each response's result as text. This is what transports hand to the client.
///
/// # Errors
///
/// As [`parse_frame`].
pub fn parse_incoming(bytes: &[u8]) -> Result<IncomingFrame, Invalid> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Seed::<Top>::default()
        .deserialize(&mut deserializer)
        .and_then(|top| deserializer.end().map(|()| top));
    let top = match parsed {
        Ok(top) => top,
        Err(error) => {
            // Text the parser refuses (too deep, a number out of range, invalid UTF-8) may still
            // show whose response it was: that call then fails at once, not at its deadline.
            let recovered = scan::recover(bytes);
            return Err(Invalid {
                id: recovered.as_ref().and_then(|read| read.id.clone()),
                error: ParseError::NotJson(error.to_string()),
                method_present: recovered.is_some_and(|read| read.method_present),
            });
        }
    };
    let frame = match top {
        Top::Array(elements) if elements.is_empty() => {
            return Err(Invalid {
                id: None,
                error: ParseError::EmptyBatch,
                method_present: false,
            })
        }
        Top::Array(elements) => IncomingFrame::Batch(
            elements
                .into_iter()
                .map(|element| match element {
                    Element::Object(members) => classify_members(members),
                    Element::Other(value) => Err(not_an_object(&value)),
                })
                .collect(),
        ),
        Top::Object(members) => IncomingFrame::Single(classify_members(members)?),
        Top::Other(value) => return Err(not_an_object(&value)),
    };
    match scan::wide_integer(bytes) {
        None => Ok(frame),
        Some((pointer, literal)) => refuse_wide_integer(frame, &pointer, &literal),
    }
}

/// Parses one frame strictly into [`Message`]s with `Value` results.
///
/// # Errors
///
/// [`ParseError::NotJson`] when the bytes are not JSON (with the id and `method_present` a
/// lenient scan could still read, so a response's caller can be told), [`ParseError::EmptyBatch`]
/// for `[]`, [`ParseError::IntegerOutOfRange`] for a message holding an integer outside the
/// 64-bit range, and for a single message every other [`ParseError`] variant. A batch's
/// elements carry their own errors inside [`Frame::Batch`].
pub fn parse_frame(bytes: &[u8]) -> Result<Frame, Invalid> {
    let into_message = |incoming: Incoming| -> Result<Message, Invalid> {
        match incoming {
            Incoming::Request(request) => Ok(Message::Request(request)),
            Incoming::Notification(notification) => Ok(Message::Notification(notification)),
            Incoming::Response(raw) => {
                let id = raw.id.clone();
                raw.into_response()
                    .map(Message::Response)
                    .map_err(|error| Invalid {
                        id,
                        error: ParseError::NotJson(error.to_string()),
                        method_present: false,
                    })
            }
        }
    };
    match parse_incoming(bytes)? {
        IncomingFrame::Single(incoming) => into_message(incoming).map(Frame::Single),
        IncomingFrame::Batch(elements) => Ok(Frame::Batch(
            elements
                .into_iter()
                .map(|element| element.and_then(into_message))
                .collect(),
        )),
    }
}

fn not_an_object(value: &Value) -> Invalid {
    Invalid {
        id: None,
        error: ParseError::NotAnObject(type_name(value)),
        method_present: false,
    }
}

/// Turns the message that holds an integer outside the 64-bit range at `pointer` (the frame,
/// or one element of a batch) into an [`Invalid`] with its id, so a request is answered and a
/// response fails its call.
fn refuse_wide_integer(
    frame: IncomingFrame,
    pointer: &str,
    literal: &str,
) -> Result<IncomingFrame, Invalid> {
    let refuse = |message: Result<Incoming, Invalid>, pointer: &str| -> Invalid {
        let error = ParseError::IntegerOutOfRange(format!("{literal} at {pointer}"));
        match message {
            Ok(Incoming::Request(request)) => Invalid {
                id: Some(request.id),
                error,
                method_present: true,
            },
            Ok(Incoming::Notification(_)) => Invalid {
                id: None,
                error,
                method_present: true,
            },
            Ok(Incoming::Response(response)) => Invalid {
                id: response.id,
                error,
                method_present: false,
            },
            Err(invalid) => invalid,
        }
    };
    match frame {
        IncomingFrame::Single(message) => Err(refuse(Ok(message), pointer)),
        IncomingFrame::Batch(mut elements) => {
            let (index, rest) = pointer
                .strip_prefix('/')
                .and_then(|tail| {
                    let (index, rest) = tail.split_once('/').unwrap_or((tail, ""));
                    Some((index.parse::<usize>().ok()?, rest))
                })
                .unwrap_or((0, ""));
            if let Some(element) = elements.get_mut(index) {
                let taken = std::mem::replace(element, Err(not_an_object(&Value::Null)));
                *element = Err(refuse(taken, &format!("/{rest}")));
            }
            Ok(IncomingFrame::Batch(elements))
        }
    }
}

/// Classifies an already parsed JSON value as a frame; see [`parse_frame`].
///
/// # Errors
///
/// As [`parse_frame`], minus [`ParseError::NotJson`] and [`ParseError::IntegerOutOfRange`].
pub fn classify_frame(value: Value) -> Result<Frame, Invalid> {
    match value {
        Value::Array(elements) => {
            if elements.is_empty() {
                return Err(Invalid {
                    id: None,
                    error: ParseError::EmptyBatch,
                    method_present: false,
                });
            }
            Ok(Frame::Batch(
                elements.into_iter().map(classify_message).collect(),
            ))
        }
        other => classify_message(other).map(Frame::Single),
    }
}

/// Classifies one JSON value as a request, notification or response.
///
/// # Errors
///
/// An [`Invalid`] carrying the id (when readable) and the reason.
pub fn classify_message(value: Value) -> Result<Message, Invalid> {
    let mut object = match value {
        Value::Object(object) => object,
        other => return Err(not_an_object(&other)),
    };
    let result = object.remove("result");
    classify(object, result).map(|classified| match classified {
        Classified::Request(request) => Message::Request(request),
        Classified::Notification(notification) => Message::Notification(notification),
        Classified::Response { id, payload } => Message::Response(Response { id, payload }),
    })
}

fn classify_members(members: Members) -> Result<Incoming, Invalid> {
    classify(members.object, members.result).map(|classified| match classified {
        Classified::Request(request) => Incoming::Request(request),
        Classified::Notification(notification) => Incoming::Notification(notification),
        Classified::Response { id, payload } => Incoming::Response(RawResponse { id, payload }),
    })
}

/// A message classified, with its result of type `R` (a `Value`, or text).
enum Classified<R> {
    Request(Request),
    Notification(Notification),
    Response {
        id: Option<RequestId>,
        payload: Result<R, ErrorObject>,
    },
}

/// The classification itself, shared by both kinds of result: the object's other members,
/// and its `result` member when it had one.
fn classify<R>(
    mut object: Map<String, Value>,
    result: Option<R>,
) -> Result<Classified<R>, Invalid> {
    // Read the id first so that every later rejection of a request can still be answered.
    let id_value = object.remove("id");
    let readable_id = id_value
        .as_ref()
        .and_then(|value| RequestId::from_value(value).ok());
    let method_present = object.contains_key("method");
    let fail = |error: ParseError| Invalid {
        id: readable_id.clone(),
        error,
        method_present,
    };
    match object.get("jsonrpc") {
        Some(Value::String(version)) if version == JSONRPC_VERSION => {}
        Some(Value::String(version)) => {
            return Err(fail(ParseError::BadVersion(format!("found {version:?}"))))
        }
        Some(other) => {
            return Err(fail(ParseError::BadVersion(format!(
                "found {}",
                type_name(other)
            ))))
        }
        None => return Err(fail(ParseError::BadVersion("missing".into()))),
    }
    if let Some(method) = object.remove("method") {
        let method = match method {
            Value::String(method) => method,
            other => return Err(fail(ParseError::MethodNotString(type_name(&other)))),
        };
        let params = match object.remove("params") {
            None => None,
            Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
            Some(other) => return Err(fail(ParseError::InvalidParams(type_name(&other)))),
        };
        return match id_value {
            None => Ok(Classified::Notification(Notification { method, params })),
            Some(id) => {
                let id = RequestId::from_value(&id).map_err(&fail)?;
                Ok(Classified::Request(Request { id, method, params }))
            }
        };
    }
    let Some(id_value) = id_value else {
        return Err(fail(ParseError::Unclassifiable));
    };
    // A response may carry a null id (the peer could not read ours); any other invalid id is an
    // error.
    let id = match id_value {
        Value::Null => None,
        other => Some(RequestId::from_value(&other).map_err(&fail)?),
    };
    let payload = match (result, object.remove("error")) {
        (Some(_), Some(_)) => return Err(fail(ParseError::BothResultAndError)),
        (None, None) => return Err(fail(ParseError::NeitherResultNorError)),
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(ErrorObject::from_value(&error).map_err(&fail)?),
    };
    Ok(Classified::Response { id, payload })
}
