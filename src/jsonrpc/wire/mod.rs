//! JSON-RPC 2.0 wire types and the strict parser.
//!
//! Every frame is parsed into a `serde_json::Value` first and then classified by hand. We do not
//! use `#[serde(untagged)]` for the message enum: with untagged enums a request whose id is
//! `null`, `1.5` or out of range silently becomes a notification, and a response with both
//! `result` and `error` is accepted. Here each of those is a precise [`ParseError`].

use std::fmt;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod parse;
pub(crate) mod scan;

pub use parse::{
    classify_frame, classify_message, parse_frame, parse_incoming, Incoming, IncomingFrame,
    RawResponse,
};

/// The only protocol version this crate speaks, the literal `"2.0"`.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request id: an integer that fits in `i64`, or a string.
///
/// `1` and `"1"` are different ids. `null`, fractions, booleans and integers outside `i64` are
/// rejected by the parser for requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(number) => Value::from(*number),
            RequestId::String(text) => Value::from(text.as_str()),
        }
    }

    /// Reads an id from a JSON value, with the reason when it is not a valid request id.
    ///
    /// # Errors
    ///
    /// [`ParseError::InvalidId`] for null, booleans, fractions, integers outside `i64`, arrays
    /// and objects.
    pub fn from_value(value: &Value) -> Result<RequestId, ParseError> {
        match value {
            Value::String(text) => Ok(RequestId::String(text.clone())),
            Value::Number(number) => match number.as_i64() {
                Some(integer) => Ok(RequestId::Number(integer)),
                None if number.is_u64() => Err(ParseError::InvalidId(format!(
                    "integer {number} does not fit in i64"
                ))),
                None => Err(ParseError::InvalidId(format!("{number} is not an integer"))),
            },
            Value::Null => Err(ParseError::InvalidId("null is not allowed".into())),
            Value::Bool(_) => Err(ParseError::InvalidId("a boolean is not allowed".into())),
            Value::Array(_) => Err(ParseError::InvalidId("an array is not allowed".into())),
            Value::Object(_) => Err(ParseError::InvalidId("an object is not allowed".into())),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(number) => write!(f, "{number}"),
            // Debug formatting keeps the quotes, so `7` and `"7"` never look alike in logs.
            RequestId::String(text) => write!(f, "{text:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Number(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        RequestId::String(value.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        RequestId::String(value)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(number) => serializer.serialize_i64(*number),
            RequestId::String(text) => serializer.serialize_str(text),
        }
    }
}

/// A JSON-RPC error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// -32700: the peer received text that is not JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// -32600: the JSON is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// -32601: the method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// -32602: invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// -32603: internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// -32002: MCP's "resource not found".
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

    /// True for the range -32099..=-32000 reserved for implementation-defined server errors.
    pub fn is_server_error(self) -> bool {
        (-32099..=-32000).contains(&self.0)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The error object of a JSON-RPC response, as it travels on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Optional extra information from the peer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> ErrorObject {
        self.data = Some(data);
        self
    }

    /// -32601 naming the method.
    pub fn method_not_found(method: &str) -> ErrorObject {
        ErrorObject::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// Reads an error object strictly: `code` an integer fitting `i32`, `message` a string.
    ///
    /// # Errors
    ///
    /// [`ParseError::InvalidErrorObject`] naming what is wrong.
    pub fn from_value(value: &Value) -> Result<ErrorObject, ParseError> {
        let object = value
            .as_object()
            .ok_or_else(|| ParseError::InvalidErrorObject("`error` is not an object".into()))?;
        let code = match object.get("code") {
            None => return Err(ParseError::InvalidErrorObject("`code` is missing".into())),
            Some(Value::Number(number)) => number
                .as_i64()
                .and_then(|code| i32::try_from(code).ok())
                .ok_or_else(|| {
                    ParseError::InvalidErrorObject(format!(
                        "`code` {number} is not an integer in the i32 range"
                    ))
                })?,
            Some(other) => {
                return Err(ParseError::InvalidErrorObject(format!(
                    "`code` is not an integer: {}",
                    type_name(other)
                )))
            }
        };
        let message = match object.get("message") {
            None => {
                return Err(ParseError::InvalidErrorObject(
                    "`message` is missing".into(),
                ))
            }
            Some(Value::String(message)) => message.clone(),
            Some(other) => {
                return Err(ParseError::InvalidErrorObject(format!(
                    "`message` is not a string: {}",
                    type_name(other)
                )))
            }
        };
        Ok(ErrorObject {
            code: ErrorCode(code),
            message,
            data: object.get("data").cloned(),
        })
    }
}

impl fmt::Display for ErrorObject {
    /// The message and `(code N)`; the message alone when it already states the code (the
    /// TypeScript SDK sends `MCP error -32602: Resource … not found`), so it is said once.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if states_code(&self.message, i64::from(self.code.0)) {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} (code {})", self.message, self.code)
        }
    }
}

/// Whether `message` holds `code` as a whole number (not inside a longer one, and with its
/// sign: `-32602`, not the `32602` of `-32602` for code 32602).
fn states_code(message: &str, code: i64) -> bool {
    let wanted = code.to_string();
    let bytes = message.as_bytes();
    message.match_indices(&wanted).any(|(at, _)| {
        let before = at.checked_sub(1).map(|index| bytes[index]);
        let after = bytes.get(at + wanted.len()).copied();
        !before.is_some_and(|byte| byte.is_ascii_digit() || byte == b'-')
            && !after.is_some_and(|byte| byte.is_ascii_digit())
    })
}

#[cfg(test)]
mod display_tests {
    use super::*;

    fn shown(code: i32, message: &str) -> String {
        ErrorObject {
            code: ErrorCode(code),
            message: message.into(),
            data: None,
        }
        .to_string()
    }

    #[test]
    fn the_code_is_said_once() {
        assert_eq!(
            shown(-32602, "MCP error -32602: Resource demo://nosuch not found"),
            "MCP error -32602: Resource demo://nosuch not found"
        );
        assert_eq!(
            shown(-32002, "Resource not found: demo://nosuch"),
            "Resource not found: demo://nosuch (code -32002)"
        );
        // Another number, or the code inside a longer one or without its sign, is not it.
        assert_eq!(
            shown(-32602, "limit -326020"),
            "limit -326020 (code -32602)"
        );
        assert_eq!(shown(32602, "error -32602"), "error -32602 (code 32602)");
        assert_eq!(shown(-1, "got -10 items"), "got -10 items (code -1)");
    }
}

impl std::error::Error for ErrorObject {}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// Structured parameters: an object or an array, or none.
    pub params: Option<Value>,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// Structured parameters: an object or an array, or none.
    pub params: Option<Value>,
}

/// A response: the id of the request it answers and either a result or an error object.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request. `None` is the wire's `null`, which a peer sends when it could not
    /// read the id of a request (parse error or invalid request).
    pub id: Option<RequestId>,
    /// The outcome: a result value or an error object, never both, never neither.
    pub payload: Result<Value, ErrorObject>,
}

impl Response {
    /// A success response.
    pub fn ok(id: RequestId, result: Value) -> Response {
        Response {
            id: Some(id),
            payload: Ok(result),
        }
    }

    /// An error response.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Response {
        Response {
            id,
            payload: Err(error),
        }
    }
}

/// Any single JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

impl From<Request> for Message {
    fn from(value: Request) -> Self {
        Message::Request(value)
    }
}

impl From<Notification> for Message {
    fn from(value: Notification) -> Self {
        Message::Notification(value)
    }
}

impl From<Response> for Message {
    fn from(value: Response) -> Self {
        Message::Response(value)
    }
}

/// One frame of input: a single message or a batch (a JSON array).
///
/// Each element of a batch is classified on its own, so one bad element does not hide the good
/// ones.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A single message.
    Single(Message),
    /// A non-empty batch; each element parsed on its own.
    Batch(Vec<Result<Message, Invalid>>),
}

/// A message that could not be classified, with the id when one could be read, so a request
/// can still be answered with -32600.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The id of the offending message, when it had a readable one.
    pub id: Option<RequestId>,
    /// What was wrong.
    pub error: ParseError,
    /// Whether the message had a `method` member: a request or notification gone wrong rather
    /// than a response.
    pub method_present: bool,
}

impl Invalid {
    /// The error response JSON-RPC 2.0 owes the sender of this message: a request gone wrong
    /// (or text that is no message at all) is answered with its id when it could be read and
    /// `null` when not (section 5.1), with -32700 for text that is not JSON and -32600 for the
    /// rest. `None` for a response gone wrong (it had an id and no `method`): responses are
    /// never answered; the call it belongs to fails instead.
    ///
    /// Whether text that is no message at all deserves an answer is the receiver's choice: a
    /// server gives one, as the specification shows; a client skips it.
    pub fn answer(&self) -> Option<Response> {
        if !self.method_present && self.id.is_some() {
            return None;
        }
        let message = match &self.error {
            ParseError::NotJson(detail) => format!("Parse error: {detail}"),
            other => other.to_string(),
        };
        Some(Response::error(
            self.id.clone(),
            ErrorObject::new(self.error.code(), message),
        ))
    }
}

/// Why a frame or message was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The text is not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// The JSON is neither an object nor an array of objects.
    #[error("a message must be a JSON object, found {0}")]
    NotAnObject(&'static str),
    /// `jsonrpc` is missing or not the string "2.0".
    #[error("`jsonrpc` must be \"2.0\": {0}")]
    BadVersion(String),
    /// A request id that is null, fractional, boolean, out of range or structured.
    #[error("invalid id: {0}")]
    InvalidId(String),
    /// `method` is not a string.
    #[error("`method` must be a string, found {0}")]
    MethodNotString(&'static str),
    /// `params` is neither an object nor an array.
    #[error("`params` must be an object or an array, found {0}")]
    InvalidParams(&'static str),
    /// A response with both `result` and `error`.
    #[error("a response must not carry both `result` and `error`")]
    BothResultAndError,
    /// A response with neither `result` nor `error`.
    #[error("a response must carry `result` or `error`")]
    NeitherResultNorError,
    /// A response's error object is malformed.
    #[error("invalid error object: {0}")]
    InvalidErrorObject(String),
    /// An object that is neither a request, a notification nor a response.
    #[error("not a request, notification or response (no `method`, and no `id`)")]
    Unclassifiable,
    /// An empty JSON array.
    #[error("an empty batch is not allowed")]
    EmptyBatch,
    /// An integer outside the 64-bit range (the literal and where it is): it cannot be
    /// carried exactly (parsers turn it into a rounded float), so it is refused rather than
    /// silently changed.
    #[error("the integer {0} is outside the 64-bit range and cannot be carried exactly")]
    IntegerOutOfRange(String),
}

impl ParseError {
    /// The JSON-RPC code a server would answer this with: -32700 for text that is not JSON,
    /// -32600 for everything else.
    pub fn code(&self) -> ErrorCode {
        match self {
            ParseError::NotJson(_) => ErrorCode::PARSE_ERROR,
            _ => ErrorCode::INVALID_REQUEST,
        }
    }
}

/// A short name for the JSON type of a value, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        match &self.payload {
            Ok(result) => map.serialize_entry("result", result)?,
            Err(error) => map.serialize_entry("error", error)?,
        }
        map.serialize_entry("id", &self.id)?;
        map.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(request) => request.serialize(serializer),
            Message::Notification(notification) => notification.serialize(serializer),
            Message::Response(response) => response.serialize(serializer),
        }
    }
}

impl Message {
    /// Serializes compactly on one line (JSON escapes every newline inside strings).
    pub fn to_line(&self) -> String {
        to_line(self)
    }
}

/// Serializes any value compactly on one line, without the trailing newline.
pub(crate) fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    // Serializing our own types into a String cannot fail: every map key is a string.
    serde_json::to_string(value).unwrap_or_else(|error| {
        log::error!("toolwire: could not serialize a message: {error}");
        String::from("null")
    })
}

/// Serializes a batch of messages as one compact JSON array.
pub fn batch_to_line(messages: &[Message]) -> String {
    to_line(messages)
}

/// Returns `params` as an object map when it is one, for callers that read named parameters.
pub fn params_object(params: &Option<Value>) -> Option<&Map<String, Value>> {
    params.as_ref().and_then(Value::as_object)
}
