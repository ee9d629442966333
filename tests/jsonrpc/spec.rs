//! Every example of section 7 of the JSON-RPC 2.0 specification
//! (<https://www.jsonrpc.org/specification#examples>), run through the strict parser, plus
//! randomized round trips of `to_line` / `batch_to_line` against `parse_frame`.
//!
//! For each `-->` text we check the classification (or the precise rejection and its code). For
//! each `<--` text we check that it parses to the expected `Response`, that serializing what we
//! parsed gives back the same JSON, and that the line is one compact line. Where the spec answers
//! a rejected request, we also build that answer from our `Invalid` (its id and its code) and
//! check it equals the spec's response.

use serde_json::{json, Map, Value};
use toolwire::jsonrpc::{
    batch_to_line, parse_frame, ErrorCode, ErrorObject, Frame, Invalid, Message, Notification,
    ParseError, Request, RequestId, Response,
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Asserts `line` is one line and compact: no whitespace at all outside JSON strings.
fn assert_compact_line(line: &str) {
    assert!(!line.contains('\n'), "line contains a newline: {line:?}");
    let mut in_string = false;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else {
            assert!(
                !c.is_whitespace(),
                "whitespace {c:?} outside a string at byte {at} of {line:?}"
            );
        }
    }
    assert!(!in_string, "unterminated string in {line:?}");
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("spec text is JSON: {error}"))
}

fn frame(text: &str) -> Frame {
    parse_frame(text.as_bytes()).unwrap_or_else(|invalid| panic!("{text} rejected: {invalid:?}"))
}

fn single(text: &str) -> Message {
    match frame(text) {
        Frame::Single(message) => message,
        other => panic!("{text} is not a single message: {other:?}"),
    }
}

fn rejected(text: &str) -> Invalid {
    match parse_frame(text.as_bytes()) {
        Ok(frame) => panic!("{text} accepted as {frame:?}"),
        Err(invalid) => invalid,
    }
}

/// Parses a `-->` single message that must be a request, and checks it serializes back to the
/// same JSON.
fn request(text: &str) -> Request {
    let message = single(text);
    assert_eq!(
        json_of(&message.to_line()),
        json_of(text),
        "reserialized request differs"
    );
    match message {
        Message::Request(request) => request,
        other => panic!("{text} is not a request: {other:?}"),
    }
}

/// Parses a `-->` single message that must be a notification, and checks it serializes back to
/// the same JSON.
fn notification(text: &str) -> Notification {
    let message = single(text);
    assert_eq!(
        json_of(&message.to_line()),
        json_of(text),
        "reserialized notification differs"
    );
    match message {
        Message::Notification(notification) => notification,
        other => panic!("{text} is not a notification: {other:?}"),
    }
}

/// Parses a `<--` single response, checks `to_line` is one compact line whose JSON equals the
/// spec's text, and returns the response.
fn response(text: &str) -> Response {
    let message = single(text);
    let line = message.to_line();
    assert_compact_line(&line);
    assert_eq!(
        json_of(&line),
        json_of(text),
        "reserialized response differs"
    );
    match message {
        Message::Response(response) => response,
        other => panic!("{text} is not a response: {other:?}"),
    }
}

/// Parses a `<--` batch of responses, checks `batch_to_line` is one compact line whose JSON
/// equals the spec's text, and returns the responses.
fn response_batch(text: &str) -> Vec<Response> {
    let Frame::Batch(elements) = frame(text) else {
        panic!("{text} is not a batch");
    };
    let messages: Vec<Message> = elements
        .into_iter()
        .map(|element| element.unwrap_or_else(|invalid| panic!("element rejected: {invalid:?}")))
        .collect();
    let line = batch_to_line(&messages);
    assert_compact_line(&line);
    assert_eq!(json_of(&line), json_of(text), "reserialized batch differs");
    messages
        .into_iter()
        .map(|message| match message {
            Message::Response(response) => response,
            other => panic!("batch element is not a response: {other:?}"),
        })
        .collect()
}

/// The answer a server gives to a rejected message, per the spec: the readable id (or null) and
/// the code of the rejection, with the spec's standard message for that code.
fn answer_to(invalid: &Invalid) -> Response {
    let code = invalid.error.code();
    let message = match code {
        ErrorCode::PARSE_ERROR => "Parse error",
        ErrorCode::INVALID_REQUEST => "Invalid Request",
        other => panic!("unexpected code {other}"),
    };
    Response::error(invalid.id.clone(), ErrorObject::new(code, message))
}

fn error_response(id: Option<RequestId>, code: i32, message: &str) -> Response {
    Response::error(id, ErrorObject::new(ErrorCode(code), message))
}

// ---------------------------------------------------------------------------------------------
// Section 7 examples
// ---------------------------------------------------------------------------------------------

#[test]
fn positional_params_subtract_42_23() {
    let call = request(r#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#);
    assert_eq!(
        call,
        Request {
            id: RequestId::Number(1),
            method: "subtract".into(),
            params: Some(json!([42, 23])),
        }
    );
    let answer = response(r#"{"jsonrpc": "2.0", "result": 19, "id": 1}"#);
    assert_eq!(answer, Response::ok(RequestId::Number(1), json!(19)));
    assert_eq!(answer.id.as_ref(), Some(&call.id));
}

#[test]
fn positional_params_subtract_23_42() {
    let call = request(r#"{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}"#);
    assert_eq!(
        call,
        Request {
            id: RequestId::Number(2),
            method: "subtract".into(),
            params: Some(json!([23, 42])),
        }
    );
    let answer = response(r#"{"jsonrpc": "2.0", "result": -19, "id": 2}"#);
    assert_eq!(answer, Response::ok(RequestId::Number(2), json!(-19)));
    assert_eq!(answer.id.as_ref(), Some(&call.id));
}

#[test]
fn named_params_subtract_subtrahend_first() {
    let call = request(
        r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#,
    );
    assert_eq!(
        call,
        Request {
            id: RequestId::Number(3),
            method: "subtract".into(),
            params: Some(json!({"subtrahend": 23, "minuend": 42})),
        }
    );
    let answer = response(r#"{"jsonrpc": "2.0", "result": 19, "id": 3}"#);
    assert_eq!(answer, Response::ok(RequestId::Number(3), json!(19)));
    assert_eq!(answer.id.as_ref(), Some(&call.id));
}

#[test]
fn named_params_subtract_minuend_first() {
    let call = request(
        r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#,
    );
    assert_eq!(
        call,
        Request {
            id: RequestId::Number(4),
            method: "subtract".into(),
            params: Some(json!({"minuend": 42, "subtrahend": 23})),
        }
    );
    let answer = response(r#"{"jsonrpc": "2.0", "result": 19, "id": 4}"#);
    assert_eq!(answer, Response::ok(RequestId::Number(4), json!(19)));
    assert_eq!(answer.id.as_ref(), Some(&call.id));
}

#[test]
fn notification_update() {
    let note = notification(r#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#);
    assert_eq!(
        note,
        Notification {
            method: "update".into(),
            params: Some(json!([1, 2, 3, 4, 5])),
        }
    );
}

#[test]
fn notification_foobar() {
    let note = notification(r#"{"jsonrpc": "2.0", "method": "foobar"}"#);
    assert_eq!(
        note,
        Notification {
            method: "foobar".into(),
            params: None,
        }
    );
}

#[test]
fn non_existent_method() {
    let call = request(r#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#);
    assert_eq!(
        call,
        Request {
            id: RequestId::String("1".into()),
            method: "foobar".into(),
            params: None,
        }
    );
    let answer = response(
        r#"{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}"#,
    );
    assert_eq!(
        answer,
        error_response(Some(RequestId::from("1")), -32601, "Method not found")
    );
    assert_eq!(answer.id.as_ref(), Some(&call.id));
    assert_eq!(
        answer.payload.unwrap_err().code,
        ErrorCode::METHOD_NOT_FOUND
    );
}

#[test]
fn invalid_json() {
    let invalid = rejected(r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#);
    assert!(
        matches!(invalid.error, ParseError::NotJson(_)),
        "{invalid:?}"
    );
    assert_eq!(invalid.error.code(), ErrorCode::PARSE_ERROR);
    assert_eq!(invalid.error.code(), ErrorCode(-32700));
    assert_eq!(invalid.id, None);
    // The lenient scan still sees that it was meant as a request (it has a `method` key),
    // so it is never taken for a response to one of ours.
    assert!(invalid.method_present);

    let answer = response(
        r#"{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}"#,
    );
    assert_eq!(answer, error_response(None, -32700, "Parse error"));
    assert_eq!(answer, answer_to(&invalid));
}

#[test]
fn invalid_request_object() {
    let invalid = rejected(r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#);
    // `method` is checked before `params`: the first fault found is the method.
    assert_eq!(invalid.error, ParseError::MethodNotString("a number"));
    assert_eq!(invalid.error.code(), ErrorCode::INVALID_REQUEST);
    assert_eq!(invalid.error.code(), ErrorCode(-32600));
    assert_eq!(invalid.id, None);
    assert!(invalid.method_present);

    let answer = response(
        r#"{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}"#,
    );
    assert_eq!(answer, error_response(None, -32600, "Invalid Request"));
    assert_eq!(answer, answer_to(&invalid));
}

#[test]
fn batch_invalid_json() {
    let invalid = rejected(
        r#"[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]"#,
    );
    assert!(
        matches!(invalid.error, ParseError::NotJson(_)),
        "{invalid:?}"
    );
    assert_eq!(invalid.error.code(), ErrorCode(-32700));
    assert_eq!(invalid.id, None);

    let answer = response(
        r#"{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}"#,
    );
    assert_eq!(answer, error_response(None, -32700, "Parse error"));
    assert_eq!(answer, answer_to(&invalid));
}

#[test]
fn empty_array() {
    let invalid = rejected(r#"[]"#);
    assert_eq!(invalid.error, ParseError::EmptyBatch);
    assert_eq!(invalid.error.code(), ErrorCode(-32600));
    assert_eq!(invalid.id, None);
    assert!(!invalid.method_present);

    let answer = response(
        r#"{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}"#,
    );
    assert_eq!(answer, error_response(None, -32600, "Invalid Request"));
    assert_eq!(answer, answer_to(&invalid));
}

#[test]
fn invalid_batch_one() {
    let Frame::Batch(elements) = frame(r#"[1]"#) else {
        panic!("[1] is not a batch");
    };
    assert_eq!(elements.len(), 1);
    let invalid = elements[0].as_ref().unwrap_err();
    assert_eq!(invalid.error, ParseError::NotAnObject("a number"));
    assert_eq!(invalid.error.code(), ErrorCode(-32600));
    assert_eq!(invalid.id, None);
    assert!(!invalid.method_present);

    let answers = response_batch(
        r#"[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]"#,
    );
    assert_eq!(
        answers,
        vec![error_response(None, -32600, "Invalid Request")]
    );
    assert_eq!(answers[0], answer_to(invalid));
}

#[test]
fn invalid_batch_one_two_three() {
    let Frame::Batch(elements) = frame(r#"[1,2,3]"#) else {
        panic!("[1,2,3] is not a batch");
    };
    assert_eq!(elements.len(), 3);
    for element in &elements {
        let invalid = element.as_ref().unwrap_err();
        assert_eq!(invalid.error, ParseError::NotAnObject("a number"));
        assert_eq!(invalid.error.code(), ErrorCode(-32600));
        assert_eq!(invalid.id, None);
        assert!(!invalid.method_present);
    }

    let answers = response_batch(
        r#"[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]"#,
    );
    assert_eq!(
        answers,
        vec![error_response(None, -32600, "Invalid Request"); 3]
    );
    for (answer, element) in answers.iter().zip(&elements) {
        assert_eq!(*answer, answer_to(element.as_ref().unwrap_err()));
    }
}

#[test]
fn mixed_batch() {
    let Frame::Batch(elements) = frame(
        r#"[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
    ]"#,
    ) else {
        panic!("the mixed batch is not a batch");
    };
    assert_eq!(elements.len(), 6);
    assert_eq!(
        elements[0],
        Ok(Message::Request(Request {
            id: RequestId::from("1"),
            method: "sum".into(),
            params: Some(json!([1, 2, 4])),
        }))
    );
    assert_eq!(
        elements[1],
        Ok(Message::Notification(Notification {
            method: "notify_hello".into(),
            params: Some(json!([7])),
        }))
    );
    assert_eq!(
        elements[2],
        Ok(Message::Request(Request {
            id: RequestId::from("2"),
            method: "subtract".into(),
            params: Some(json!([42, 23])),
        }))
    );
    let foo = elements[3].as_ref().unwrap_err();
    // `{"foo": "boo"}` has no `jsonrpc` member, the first thing checked.
    assert!(matches!(foo.error, ParseError::BadVersion(_)), "{foo:?}");
    assert_eq!(foo.error.code(), ErrorCode(-32600));
    assert_eq!(foo.id, None);
    assert!(!foo.method_present);
    assert_eq!(
        elements[4],
        Ok(Message::Request(Request {
            id: RequestId::from("5"),
            method: "foo.get".into(),
            params: Some(json!({"name": "myself"})),
        }))
    );
    assert_eq!(
        elements[5],
        Ok(Message::Request(Request {
            id: RequestId::from("9"),
            method: "get_data".into(),
            params: None,
        }))
    );

    let answers = response_batch(
        r#"[
        {"jsonrpc": "2.0", "result": 7, "id": "1"},
        {"jsonrpc": "2.0", "result": 19, "id": "2"},
        {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
        {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
        {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
    ]"#,
    );
    assert_eq!(
        answers,
        vec![
            Response::ok(RequestId::from("1"), json!(7)),
            Response::ok(RequestId::from("2"), json!(19)),
            error_response(None, -32600, "Invalid Request"),
            error_response(Some(RequestId::from("5")), -32601, "Method not found"),
            Response::ok(RequestId::from("9"), json!(["hello", 5])),
        ]
    );
    // Everything but the notification is answered, in order.
    let answered: Vec<Option<RequestId>> = elements
        .iter()
        .filter_map(|element| match element {
            Ok(Message::Request(request)) => Some(Some(request.id.clone())),
            Ok(Message::Notification(_)) => None,
            Ok(Message::Response(_)) => panic!("no response in the request batch"),
            Err(invalid) => Some(invalid.id.clone()),
        })
        .collect();
    let answer_ids: Vec<Option<RequestId>> =
        answers.iter().map(|answer| answer.id.clone()).collect();
    assert_eq!(answered, answer_ids);
    assert_eq!(answers[2], answer_to(foo));
}

#[test]
fn all_notification_batch() {
    let text = r#"[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]"#;
    let Frame::Batch(elements) = frame(text) else {
        panic!("the notification batch is not a batch");
    };
    let expected = vec![
        Message::Notification(Notification {
            method: "notify_sum".into(),
            params: Some(json!([1, 2, 4])),
        }),
        Message::Notification(Notification {
            method: "notify_hello".into(),
            params: Some(json!([7])),
        }),
    ];
    assert_eq!(
        elements,
        expected.iter().cloned().map(Ok).collect::<Vec<_>>()
    );
    // Nothing is answered for an all-notification batch; our own serialization matches.
    let line = batch_to_line(&expected);
    assert_compact_line(&line);
    assert_eq!(json_of(&line), json_of(text));
}

// ---------------------------------------------------------------------------------------------
// Random round trips
// ---------------------------------------------------------------------------------------------

/// xorshift64: deterministic, no crates.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.below(100) < chance
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn i64(&mut self) -> i64 {
        match self.below(6) {
            0 => *self.pick(&[0, 1, -1, i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1]),
            1 => self.below(1000) as i64,
            2 => -(self.below(1000) as i64),
            _ => self.next() as i64,
        }
    }

    fn char(&mut self) -> char {
        const SPECIAL: &[char] = &[
            '"',
            '\\',
            '/',
            '\n',
            '\r',
            '\t',
            '\u{0}',
            '\u{1}',
            '\u{8}',
            '\u{c}',
            '\u{1f}',
            '\u{7f}',
            ' ',
            '{',
            '}',
            '[',
            ']',
            ':',
            ',',
            'é',
            'ß',
            'Ω',
            '中',
            '文',
            '😀',
            '🦀',
            '\u{2028}',
            '\u{2029}',
            '\u{feff}',
            '\u{fffd}',
            '\u{10ffff}',
            '\u{e000}',
            '\u{301}',
        ];
        match self.below(4) {
            0 => *self.pick(SPECIAL),
            1 => loop {
                if let Some(c) = char::from_u32(self.below(0x11_0000) as u32) {
                    break c;
                }
            },
            _ => char::from(b' ' + self.below(95) as u8),
        }
    }

    fn string(&mut self) -> String {
        let len = match self.below(10) {
            0 => 0,
            9 => self.below(64),
            _ => self.below(12),
        };
        (0..len).map(|_| self.char()).collect()
    }

    fn id(&mut self) -> RequestId {
        if self.percent(50) {
            RequestId::Number(self.i64())
        } else {
            RequestId::String(self.string())
        }
    }

    /// A float that JSON text represents exactly: a 24-bit integer over a power of two.
    fn float(&mut self) -> f64 {
        let mantissa = (self.next() as i64) >> 40;
        mantissa as f64 / f64::from(1u32 << self.below(9))
    }

    fn value(&mut self, depth: u32) -> Value {
        let kinds = if depth == 0 { 6 } else { 8 };
        match self.below(kinds) {
            0 => Value::Null,
            1 => Value::Bool(self.percent(50)),
            2 => Value::from(self.i64()),
            3 => {
                if self.percent(30) {
                    Value::from(u64::MAX - self.below(1000))
                } else {
                    Value::from(self.float())
                }
            }
            4 | 5 => Value::String(self.string()),
            6 => self.array(depth - 1),
            _ => self.object(depth - 1),
        }
    }

    fn array(&mut self, depth: u32) -> Value {
        let len = self.below(5);
        Value::Array((0..len).map(|_| self.value(depth)).collect())
    }

    fn object(&mut self, depth: u32) -> Value {
        let len = self.below(5);
        let mut map = Map::new();
        for _ in 0..len {
            map.insert(self.string(), self.value(depth));
        }
        Value::Object(map)
    }

    fn params(&mut self) -> Option<Value> {
        let depth = self.below(4) as u32;
        match self.below(3) {
            0 => None,
            1 => Some(self.array(depth)),
            _ => Some(self.object(depth)),
        }
    }

    fn error_object(&mut self) -> ErrorObject {
        let code = if self.percent(50) {
            *self.pick(&[
                -32700, -32600, -32601, -32602, -32603, -32000, -32099, -32002,
            ])
        } else {
            match self.below(4) {
                0 => *self.pick(&[i32::MIN, i32::MAX, 0, 1, -1]),
                _ => self.next() as i32,
            }
        };
        let error = ErrorObject::new(ErrorCode(code), self.string());
        match self.below(3) {
            0 => error,
            1 => error.with_data(Value::Null),
            _ => {
                let depth = self.below(4) as u32;
                error.with_data(self.value(depth))
            }
        }
    }

    fn message(&mut self) -> Message {
        match self.below(4) {
            0 => Message::Request(Request {
                id: self.id(),
                method: self.string(),
                params: self.params(),
            }),
            1 => Message::Notification(Notification {
                method: self.string(),
                params: self.params(),
            }),
            2 => {
                let depth = self.below(4) as u32;
                Message::Response(Response::ok(self.id(), self.value(depth)))
            }
            _ => {
                // A null id only with an error, as the spec allows.
                let id = if self.percent(10) {
                    None
                } else {
                    Some(self.id())
                };
                Message::Response(Response::error(id, self.error_object()))
            }
        }
    }
}

#[test]
fn roundtrip_random_messages() {
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    for round in 0..10_000 {
        let message = rng.message();
        let line = message.to_line();
        assert!(!line.contains('\n'), "round {round}: newline in {line:?}");
        assert_compact_line(&line);
        let parsed = parse_frame(line.as_bytes())
            .unwrap_or_else(|invalid| panic!("round {round}: {line:?} rejected: {invalid:?}"));
        assert_eq!(
            parsed,
            Frame::Single(message),
            "round {round}: {line:?} did not round-trip"
        );
    }
}

#[test]
fn roundtrip_random_batches() {
    let mut rng = Rng::new(0xD1B5_4A32_D192_ED03);
    for round in 0..2_000 {
        let len = 1 + rng.below(10) as usize;
        let messages: Vec<Message> = (0..len).map(|_| rng.message()).collect();
        let line = batch_to_line(&messages);
        assert!(!line.contains('\n'), "round {round}: newline in {line:?}");
        assert_compact_line(&line);
        let parsed = parse_frame(line.as_bytes())
            .unwrap_or_else(|invalid| panic!("round {round}: {line:?} rejected: {invalid:?}"));
        assert_eq!(
            parsed,
            Frame::Batch(messages.into_iter().map(Ok).collect()),
            "round {round}: {line:?} did not round-trip"
        );
    }
}
