//! One test per rejection (and per deliberate acceptance) of the strict JSON-RPC parser.
//!
//! A leading byte-order mark or surrounding whitespace is not the parser's concern: the line
//! reader (`transport::lines`) strips the BOM and the trailing `\r` before a frame reaches
//! `parse_frame`, so it is not tested here.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::json;
use toolwire::jsonrpc::{
    parse_frame, ErrorCode, ErrorObject, Frame, Invalid, Message, Notification, ParseError,
    Request, RequestId, Response,
};

/// Parses `text`, which must be rejected as a whole.
fn rejected(text: &str) -> Invalid {
    match parse_frame(text.as_bytes()) {
        Ok(frame) => panic!("{text} accepted as {frame:?}"),
        Err(invalid) => {
            // Everything but text that is not JSON is answered with -32600.
            if !matches!(invalid.error, ParseError::NotJson(_)) {
                assert_eq!(invalid.error.code(), ErrorCode::INVALID_REQUEST);
            }
            invalid
        }
    }
}

/// Parses `text`, which must be one valid message.
fn accepted(text: &str) -> Message {
    match parse_frame(text.as_bytes()) {
        Ok(Frame::Single(message)) => message,
        Ok(other) => panic!("{text} is not a single message: {other:?}"),
        Err(invalid) => panic!("{text} rejected: {invalid:?}"),
    }
}

fn hash_of(id: &RequestId) -> u64 {
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

// --- jsonrpc -------------------------------------------------------------------------------

#[test]
fn version_1_0_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#);
    assert!(
        matches!(invalid.error, ParseError::BadVersion(_)),
        "{invalid:?}"
    );
}

#[test]
fn version_missing_rejected() {
    let invalid = rejected(r#"{"id":1,"method":"m"}"#);
    assert!(
        matches!(invalid.error, ParseError::BadVersion(_)),
        "{invalid:?}"
    );
}

#[test]
fn version_number_rejected() {
    let invalid = rejected(r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#);
    assert!(
        matches!(invalid.error, ParseError::BadVersion(_)),
        "{invalid:?}"
    );
}

#[test]
fn bad_version_request_keeps_id_and_method_present() {
    let invalid = rejected(r#"{"jsonrpc":"1.0","id":"abc","method":"m"}"#);
    assert!(
        matches!(invalid.error, ParseError::BadVersion(_)),
        "{invalid:?}"
    );
    assert_eq!(invalid.id, Some(RequestId::from("abc")));
    assert!(invalid.method_present);
}

// --- request ids -------------------------------------------------------------------------------

fn assert_request_id_rejected(id: &str) {
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
    let invalid = rejected(&text);
    assert!(
        matches!(invalid.error, ParseError::InvalidId(_)),
        "{text}: {invalid:?}"
    );
    assert_eq!(invalid.id, None, "{text}: an invalid id is not readable");
    assert!(invalid.method_present);
}

#[test]
fn request_id_null_rejected() {
    assert_request_id_rejected("null");
}

#[test]
fn request_id_fraction_rejected() {
    assert_request_id_rejected("1.5");
}

#[test]
fn request_id_boolean_rejected() {
    assert_request_id_rejected("true");
}

#[test]
fn request_id_2_pow_63_rejected() {
    assert_request_id_rejected("9223372036854775808");
}

#[test]
fn request_id_below_i64_min_rejected() {
    assert_request_id_rejected("-9223372036854775809");
}

#[test]
fn request_id_array_rejected() {
    assert_request_id_rejected("[1]");
}

#[test]
fn request_id_object_rejected() {
    assert_request_id_rejected(r#"{"id":1}"#);
}

#[test]
fn response_id_fraction_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#);
    assert!(
        matches!(invalid.error, ParseError::InvalidId(_)),
        "{invalid:?}"
    );
    assert_eq!(invalid.id, None);
    assert!(!invalid.method_present);
}

#[test]
fn i64_min_id_accepted() {
    let message = accepted(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"}"#);
    assert_eq!(
        message,
        Message::Request(Request {
            id: RequestId::Number(i64::MIN),
            method: "m".into(),
            params: None,
        })
    );
}

#[test]
fn i64_max_id_accepted() {
    let message = accepted(r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"m"}"#);
    assert_eq!(
        message,
        Message::Request(Request {
            id: RequestId::Number(i64::MAX),
            method: "m".into(),
            params: None,
        })
    );
}

#[test]
fn number_and_string_ids_differ() {
    let number = RequestId::from_value(&json!(1)).unwrap();
    let string = RequestId::from_value(&json!("1")).unwrap();
    assert_eq!(number, RequestId::Number(1));
    assert_eq!(string, RequestId::String("1".into()));
    assert_ne!(number, string);
    assert_ne!(hash_of(&number), hash_of(&string));
    assert_ne!(number.to_string(), string.to_string());
    assert_eq!(number.to_string(), "1");
    assert_eq!(string.to_string(), r#""1""#);

    // And through the parser: a response to `"1"` does not answer request `1`.
    let Message::Response(response) = accepted(r#"{"jsonrpc":"2.0","id":"1","result":true}"#)
    else {
        panic!("not a response");
    };
    assert_eq!(response.id, Some(string));
    assert_ne!(response.id, Some(number));
}

// --- responses ---------------------------------------------------------------------------------

#[test]
fn response_with_result_and_error_rejected() {
    let invalid =
        rejected(r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":-32603,"message":"boom"}}"#);
    assert_eq!(invalid.error, ParseError::BothResultAndError);
}

#[test]
fn response_with_result_and_error_keeps_id_without_method_present() {
    let invalid = rejected(
        r#"{"jsonrpc":"2.0","id":"r-7","result":null,"error":{"code":-32603,"message":"boom"}}"#,
    );
    assert_eq!(invalid.error, ParseError::BothResultAndError);
    assert_eq!(invalid.id, Some(RequestId::from("r-7")));
    assert!(!invalid.method_present);
}

#[test]
fn response_with_neither_result_nor_error_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","id":7}"#);
    assert_eq!(invalid.error, ParseError::NeitherResultNorError);
    assert_eq!(invalid.id, Some(RequestId::Number(7)));
    assert!(!invalid.method_present);
}

#[test]
fn response_null_id_with_error_accepted() {
    let message =
        accepted(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#);
    assert_eq!(
        message,
        Message::Response(Response::error(
            None,
            ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error")
        ))
    );
}

/// The spec allows a null id only when the request's id could not be read, which is always an
/// error. The parser does not enforce that: it accepts a null-id result as a `Response` with id
/// `None` (the client then drops it as unmatched).
#[test]
fn response_null_id_with_result_accepted() {
    let message = accepted(r#"{"jsonrpc":"2.0","result":42,"id":null}"#);
    assert_eq!(
        message,
        Message::Response(Response {
            id: None,
            payload: Ok(json!(42)),
        })
    );
}

// --- error objects -----------------------------------------------------------------------------

fn assert_error_object_rejected(error: &str) {
    let text = format!(r#"{{"jsonrpc":"2.0","id":3,"error":{error}}}"#);
    let invalid = rejected(&text);
    assert!(
        matches!(invalid.error, ParseError::InvalidErrorObject(_)),
        "{text}: {invalid:?}"
    );
    // The response's id is readable, so the pending call can be failed at once.
    assert_eq!(invalid.id, Some(RequestId::Number(3)));
    assert!(!invalid.method_present);
}

#[test]
fn error_code_string_rejected() {
    assert_error_object_rejected(r#"{"code":"-32600","message":"m"}"#);
}

#[test]
fn error_code_fraction_rejected() {
    assert_error_object_rejected(r#"{"code":1.5,"message":"m"}"#);
}

#[test]
fn error_code_out_of_i32_rejected() {
    assert_error_object_rejected(r#"{"code":1099511627776,"message":"m"}"#);
}

#[test]
fn error_code_missing_rejected() {
    assert_error_object_rejected(r#"{"message":"m"}"#);
}

#[test]
fn error_code_i32_bounds_accepted() {
    for code in [i32::MIN, i32::MAX] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":{code},"message":"m"}}}}"#);
        assert_eq!(
            accepted(&text),
            Message::Response(Response::error(
                Some(RequestId::Number(3)),
                ErrorObject::new(ErrorCode(code), "m")
            ))
        );
    }
}

#[test]
fn error_message_not_string_rejected() {
    assert_error_object_rejected(r#"{"code":-32600,"message":42}"#);
}

#[test]
fn error_message_missing_rejected() {
    assert_error_object_rejected(r#"{"code":-32600}"#);
}

#[test]
fn error_not_an_object_rejected() {
    assert_error_object_rejected(r#""Invalid Request""#);
}

// --- method and params -------------------------------------------------------------------------

#[test]
fn method_not_string_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","id":1,"method":["m"]}"#);
    assert_eq!(invalid.error, ParseError::MethodNotString("an array"));
    assert_eq!(invalid.id, Some(RequestId::Number(1)));
    assert!(invalid.method_present);
}

#[test]
fn params_string_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"bar"}"#);
    assert_eq!(invalid.error, ParseError::InvalidParams("a string"));
    assert_eq!(invalid.id, Some(RequestId::Number(1)));
    assert!(invalid.method_present);
}

#[test]
fn params_number_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","method":"m","params":5}"#);
    assert_eq!(invalid.error, ParseError::InvalidParams("a number"));
    assert_eq!(invalid.id, None);
    assert!(invalid.method_present);
}

#[test]
fn notification_with_params_array_accepted() {
    let message = accepted(r#"{"jsonrpc":"2.0","method":"notify","params":[1,"two",{"three":3}]}"#);
    assert_eq!(
        message,
        Message::Notification(Notification {
            method: "notify".into(),
            params: Some(json!([1, "two", {"three": 3}])),
        })
    );
}

// --- shapes ------------------------------------------------------------------------------------

#[test]
fn not_json_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","#);
    assert!(
        matches!(invalid.error, ParseError::NotJson(_)),
        "{invalid:?}"
    );
    assert_eq!(invalid.error.code(), ErrorCode::PARSE_ERROR);
}

#[test]
fn top_level_scalar_rejected() {
    let invalid = rejected(r#""hello""#);
    assert_eq!(invalid.error, ParseError::NotAnObject("a string"));
}

#[test]
fn object_without_method_or_id_rejected() {
    let invalid = rejected(r#"{"jsonrpc":"2.0","result":1}"#);
    assert_eq!(invalid.error, ParseError::Unclassifiable);
    assert_eq!(invalid.id, None);
    assert!(!invalid.method_present);
}

#[test]
fn empty_batch_rejected() {
    let invalid = rejected("[]");
    assert_eq!(invalid.error, ParseError::EmptyBatch);
    assert_eq!(invalid.id, None);
}

#[test]
fn mixed_batch_classifies_each_element() {
    let text = r#"[
        {"jsonrpc":"2.0","id":1,"method":"ok"},
        {"jsonrpc":"1.0","id":2,"method":"old"},
        {"jsonrpc":"2.0","method":"tick"},
        {"jsonrpc":"2.0","id":"three","method":"m","params":"bad"},
        {"jsonrpc":"2.0","id":4,"result":"done"},
        {"jsonrpc":"2.0","id":5,"result":1,"error":{"code":1,"message":"x"}},
        {"jsonrpc":"2.0","id":null,"method":"m"},
        7,
        []
    ]"#;
    let Frame::Batch(elements) = parse_frame(text.as_bytes()).expect("a batch") else {
        panic!("not a batch");
    };
    assert_eq!(elements.len(), 9);

    assert_eq!(
        elements[0],
        Ok(Message::Request(Request {
            id: RequestId::Number(1),
            method: "ok".into(),
            params: None,
        }))
    );

    let old = elements[1].as_ref().unwrap_err();
    assert!(matches!(old.error, ParseError::BadVersion(_)), "{old:?}");
    assert_eq!(old.id, Some(RequestId::Number(2)));
    assert!(old.method_present);

    assert_eq!(
        elements[2],
        Ok(Message::Notification(Notification {
            method: "tick".into(),
            params: None,
        }))
    );

    let bad_params = elements[3].as_ref().unwrap_err();
    assert_eq!(bad_params.error, ParseError::InvalidParams("a string"));
    assert_eq!(bad_params.id, Some(RequestId::from("three")));
    assert!(bad_params.method_present);

    assert_eq!(
        elements[4],
        Ok(Message::Response(Response::ok(
            RequestId::Number(4),
            json!("done")
        )))
    );

    let both = elements[5].as_ref().unwrap_err();
    assert_eq!(both.error, ParseError::BothResultAndError);
    assert_eq!(both.id, Some(RequestId::Number(5)));
    assert!(!both.method_present);

    let null_id = elements[6].as_ref().unwrap_err();
    assert!(
        matches!(null_id.error, ParseError::InvalidId(_)),
        "{null_id:?}"
    );
    assert_eq!(null_id.id, None);
    assert!(null_id.method_present);

    let seven = elements[7].as_ref().unwrap_err();
    assert_eq!(seven.error, ParseError::NotAnObject("a number"));
    assert_eq!(seven.id, None);

    // A nested array is an element like any other, not a nested batch.
    let nested = elements[8].as_ref().unwrap_err();
    assert_eq!(nested.error, ParseError::NotAnObject("an array"));
}
