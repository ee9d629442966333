//! Resources, resource templates, prompts and completions, typed like tools are: the fields a
//! caller needs, and the whole object as `raw`, so nothing a server sends is dropped.

use serde_json::{Map, Value};

use super::result::Content;
use crate::error::{Error, Result};

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `raw`'s object with the typed fields written over it: a field that is `None` is left out.
fn overlay(raw: &Value, fields: &[(&str, Option<Value>)]) -> Value {
    let mut object = match raw {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    for (key, value) in fields {
        match value {
            Some(value) => object.insert((*key).into(), value.clone()),
            None => object.remove(*key),
        };
    }
    Value::Object(object)
}

fn some_text(value: &Option<String>) -> Option<Value> {
    value.clone().map(Value::from)
}

fn required(value: &Value, key: &str, what: &str) -> Result<String> {
    text(value, key).ok_or_else(|| Error::Protocol(format!("{what} without a string `{key}`")))
}

/// A resource as `resources/list` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URI, to read it by.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
    /// The whole object as the server sent it.
    pub raw: Value,
}

impl Resource {
    /// Reads a resource description.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `uri` or `name` is not a string.
    pub fn from_value(value: Value) -> Result<Resource> {
        Ok(Resource {
            uri: required(&value, "uri", "a resource")?,
            name: required(&value, "name", "a resource")?,
            title: text(&value, "title"),
            description: text(&value, "description"),
            mime_type: text(&value, "mimeType"),
            size: value.get("size").and_then(Value::as_u64),
            raw: value,
        })
    }

    /// A resource at `uri` named `name`, with nothing else said about it yet.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Resource {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            raw: Value::Null,
        }
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Resource {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Resource {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Resource {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The resource as `resources/list` carries it: the typed fields written over `raw`, so
    /// what a server sent beyond them (`annotations`, `_meta`, `icons`, …) is kept.
    pub fn to_value(&self) -> Value {
        overlay(
            &self.raw,
            &[
                ("uri", Some(Value::from(self.uri.clone()))),
                ("name", Some(Value::from(self.name.clone()))),
                ("title", some_text(&self.title)),
                ("description", some_text(&self.description)),
                ("mimeType", some_text(&self.mime_type)),
                ("size", self.size.map(Value::from)),
            ],
        )
    }
}

/// A resource template as `resources/templates/list` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// The MIME type of the resources it makes, when known.
    pub mime_type: Option<String>,
    /// The whole object as the server sent it.
    pub raw: Value,
}

impl ResourceTemplate {
    /// Reads a resource template.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `uriTemplate` or `name` is not a string.
    pub fn from_value(value: Value) -> Result<ResourceTemplate> {
        Ok(ResourceTemplate {
            uri_template: required(&value, "uriTemplate", "a resource template")?,
            name: required(&value, "name", "a resource template")?,
            title: text(&value, "title"),
            description: text(&value, "description"),
            mime_type: text(&value, "mimeType"),
            raw: value,
        })
    }

    /// A template of URIs named `name`, with nothing else said about it yet.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> ResourceTemplate {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            raw: Value::Null,
        }
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> ResourceTemplate {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> ResourceTemplate {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type of the resources it makes.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> ResourceTemplate {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The template as `resources/templates/list` carries it: the typed fields written over
    /// `raw`.
    pub fn to_value(&self) -> Value {
        overlay(
            &self.raw,
            &[
                ("uriTemplate", Some(Value::from(self.uri_template.clone()))),
                ("name", Some(Value::from(self.name.clone()))),
                ("title", some_text(&self.title)),
                ("description", some_text(&self.description)),
                ("mimeType", some_text(&self.mime_type)),
            ],
        )
    }
}

/// One item of a `resources/read` result: text or base64 bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    /// The URI of this item.
    pub uri: String,
    /// Its MIME type, when given.
    pub mime_type: Option<String>,
    /// The text, for a text resource.
    pub text: Option<String>,
    /// The base64 bytes, for a binary resource.
    pub blob: Option<String>,
    /// The whole item as the server sent it.
    pub raw: Value,
}

impl ResourceContents {
    /// Reads one item of `contents`.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `uri` is not a string, or the item has neither `text` nor
    /// `blob`.
    pub fn from_value(value: Value) -> Result<ResourceContents> {
        let uri = required(&value, "uri", "a resource contents item")?;
        let (text, blob) = (text(&value, "text"), text(&value, "blob"));
        if text.is_none() && blob.is_none() {
            return Err(Error::Protocol(format!(
                "the contents of resource `{uri}` have neither `text` nor `blob`"
            )));
        }
        Ok(ResourceContents {
            uri,
            mime_type: self::text(&value, "mimeType"),
            text,
            blob,
            raw: value,
        })
    }

    /// Reads the `contents` array of a `resources/read` result.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `contents` is missing, not an array, or holds a malformed
    /// item.
    pub fn list_from_result(result: &Value) -> Result<Vec<ResourceContents>> {
        result
            .get("contents")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                Error::Protocol("a resources/read result has no `contents` array".into())
            })?
            .iter()
            .cloned()
            .map(ResourceContents::from_value)
            .collect()
    }
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt as `prompts/list` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The name to get it by.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// The arguments it takes, in order.
    pub arguments: Vec<PromptArgument>,
    /// The whole object as the server sent it.
    pub raw: Value,
}

impl Prompt {
    /// Reads a prompt description.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `name` is not a string, `arguments` is not an array, or an
    /// argument has no string `name`.
    pub fn from_value(value: Value) -> Result<Prompt> {
        let name = required(&value, "name", "a prompt")?;
        let arguments = Prompt::arguments_of(&name, &value)?;
        Ok(Prompt {
            title: text(&value, "title"),
            description: text(&value, "description"),
            name,
            arguments,
            raw: value,
        })
    }

    fn arguments_of(name: &str, value: &Value) -> Result<Vec<PromptArgument>> {
        Ok(match value.get("arguments") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(arguments)) => arguments
                .iter()
                .map(|argument| {
                    Ok(PromptArgument {
                        name: required(
                            argument,
                            "name",
                            &format!("an argument of prompt `{name}`"),
                        )?,
                        description: text(argument, "description"),
                        required: argument
                            .get("required")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            Some(_) => {
                return Err(Error::Protocol(format!(
                    "the `arguments` of prompt `{name}` are not an array"
                )))
            }
        })
    }

    /// A prompt named `name`, with nothing else said about it yet.
    pub fn new(name: impl Into<String>) -> Prompt {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            raw: Value::Null,
        }
    }

    /// Sets the display title.
    pub fn title(mut self, title: impl Into<String>) -> Prompt {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Prompt {
        self.description = Some(description.into());
        self
    }

    /// Adds an argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Prompt {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required,
        });
        self
    }

    /// The prompt as `prompts/list` carries it: the typed fields written over `raw` (the
    /// arguments as they were read while they are still what was read, so their other
    /// fields are kept).
    pub fn to_value(&self) -> Value {
        let read = Prompt::arguments_of(&self.name, &self.raw).ok();
        let arguments = if read.as_ref() == Some(&self.arguments) {
            self.raw.get("arguments").cloned()
        } else if self.arguments.is_empty() {
            None
        } else {
            Some(Value::Array(
                self.arguments
                    .iter()
                    .map(PromptArgument::to_value)
                    .collect(),
            ))
        };
        overlay(
            &self.raw,
            &[
                ("name", Some(Value::from(self.name.clone()))),
                ("title", some_text(&self.title)),
                ("description", some_text(&self.description)),
                ("arguments", arguments),
            ],
        )
    }
}

impl PromptArgument {
    /// The argument as `prompts/list` carries it.
    pub fn to_value(&self) -> Value {
        overlay(
            &Value::Null,
            &[
                ("name", Some(Value::from(self.name.clone()))),
                ("description", some_text(&self.description)),
                ("required", Some(Value::Bool(self.required))),
            ],
        )
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// "user" or "assistant".
    pub role: String,
    /// What the message holds.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPromptResult {
    /// The prompt's description, when given.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
    /// The whole result as the server sent it.
    pub raw: Value,
}

impl GetPromptResult {
    /// Reads a `prompts/get` result.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `messages` is not an array, or a message has no string
    /// `role` or no `content`.
    pub fn from_value(value: Value) -> Result<GetPromptResult> {
        let messages = value
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Protocol("a prompts/get result has no `messages` array".into()))?
            .iter()
            .map(|message| {
                Ok(PromptMessage {
                    role: required(message, "role", "a prompt message")?,
                    content: Content::from_value(message.get("content").cloned().ok_or_else(
                        || Error::Protocol("a prompt message without `content`".into()),
                    )?),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(GetPromptResult {
            description: text(&value, "description"),
            messages,
            raw: value,
        })
    }
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The suggested values, best first.
    pub values: Vec<String>,
    /// How many values there are in all, when the server knows.
    pub total: Option<u64>,
    /// Whether there are more values than these.
    pub has_more: bool,
    /// The whole result as the server sent it.
    pub raw: Value,
}

impl Completion {
    /// Reads a `completion/complete` result.
    ///
    /// # Errors
    ///
    /// [`Error::Protocol`] when `completion.values` is not an array of strings.
    pub fn from_value(value: Value) -> Result<Completion> {
        let completion = value
            .get("completion")
            .ok_or_else(|| Error::Protocol("a completion result has no `completion`".into()))?;
        let values = completion
            .get("values")
            .and_then(Value::as_array)
            .and_then(|values| {
                values
                    .iter()
                    .map(|value| value.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                Error::Protocol("`completion.values` must be an array of strings".into())
            })?;
        Ok(Completion {
            values,
            total: completion.get("total").and_then(Value::as_u64),
            has_more: completion
                .get("hasMore")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            raw: value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_and_templates_keep_unknown_fields() {
        let resource = Resource::from_value(json!({
            "uri": "file:///a", "name": "a", "mimeType": "text/plain", "size": 3, "x-extra": 1
        }))
        .unwrap();
        assert_eq!(resource.size, Some(3));
        assert_eq!(resource.raw["x-extra"], 1);
        assert!(Resource::from_value(json!({"name": "no uri"})).is_err());
        let template =
            ResourceTemplate::from_value(json!({"uriTemplate": "file:///{path}", "name": "f"}))
                .unwrap();
        assert_eq!(template.uri_template, "file:///{path}");
    }

    #[test]
    fn contents_need_text_or_blob() {
        let result = json!({"contents": [
            {"uri": "file:///a", "text": "hello"},
            {"uri": "file:///b", "blob": "AAE=", "mimeType": "application/octet-stream"}
        ]});
        let contents = ResourceContents::list_from_result(&result).unwrap();
        assert_eq!(contents[0].text.as_deref(), Some("hello"));
        assert_eq!(contents[1].blob.as_deref(), Some("AAE="));
        assert!(ResourceContents::from_value(json!({"uri": "file:///c"})).is_err());
        assert!(ResourceContents::list_from_result(&json!({})).is_err());
    }

    #[test]
    fn prompts_messages_and_completions() {
        let prompt = Prompt::from_value(json!({
            "name": "greet", "arguments": [{"name": "who", "required": true}, {"name": "tone"}]
        }))
        .unwrap();
        assert_eq!(prompt.arguments.len(), 2);
        assert!(prompt.arguments[0].required && !prompt.arguments[1].required);
        assert!(Prompt::from_value(json!({"name": "p", "arguments": {}})).is_err());
        let got = GetPromptResult::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]
        }))
        .unwrap();
        assert_eq!(got.messages[0].content.as_text(), Some("hi"));
        let completion = Completion::from_value(
            json!({"completion": {"values": ["a", "b"], "total": 9, "hasMore": true}}),
        )
        .unwrap();
        assert_eq!(completion.values, vec!["a", "b"]);
        assert!(completion.has_more);
        assert!(Completion::from_value(json!({"completion": {"values": [1]}})).is_err());
    }
}
