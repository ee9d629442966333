//! Paged lists (`tools/list`, `resources/list`, …) read page by page as JSON text: each page's
//! items are cut out of the page's text one by one and kept as text, so a list never exists as
//! a tree of `Value`s (15 to 20 times the size of its text), and the whole listing is bounded
//! in bytes and in items.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::McpInner;
use crate::client::CallOptions;
use crate::error::{Error, Result};

/// One page: its items as text, the cursor of the next one, and its `resultType`.
struct Page {
    items: Option<Vec<Box<RawValue>>>,
    next_cursor: Option<Value>,
    result_type: Option<Value>,
}

/// Reads a page, cutting the array under `key` into items as it goes.
struct PageSeed<'a> {
    key: &'a str,
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = Page;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Page, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = Page;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list result with a `{}` array", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Page, A::Error> {
        let mut page = Page {
            items: None,
            next_cursor: None,
            result_type: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            if key == self.key {
                page.items = Some(map.next_value_seed(Items)?);
            } else if key == "nextCursor" {
                page.next_cursor = Some(map.next_value::<Value>()?);
            } else if key == "resultType" {
                page.result_type = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(page)
    }
}

/// An array read as the text of each element.
struct Items;

impl<'de> DeserializeSeed<'de> for Items {
    type Value = Vec<Box<RawValue>>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items {
    type Value = Vec<Box<RawValue>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Box<RawValue>>()? {
            items.push(item);
        }
        Ok(items)
    }
}

impl McpInner {
    /// Every item of a paged list as JSON text, following `nextCursor`: at most `max_pages`
    /// pages, never a repeated cursor, at most `max_list_bytes` of page text and
    /// `max_list_items` items in all.
    pub(super) fn list_all(&self, method: &str, key: &str) -> Result<Vec<Box<RawValue>>> {
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut cursor: Option<Value> = None;
        let mut seen_cursors: HashSet<String> = HashSet::new();
        for _page in 0..self.config.max_pages {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => Value::Null,
            };
            let text = self.request_text(method, params, CallOptions::new())?;
            bytes = bytes.saturating_add(text.len());
            if bytes > self.config.max_list_bytes {
                return Err(Error::Protocol(format!(
                    "{method}: the listing is over {} bytes; stopping (McpConfig::max_list_bytes)",
                    self.config.max_list_bytes
                )));
            }
            let mut deserializer = serde_json::Deserializer::from_str(&text);
            let page = PageSeed { key }
                .deserialize(&mut deserializer)
                .map_err(|error| {
                    Error::Protocol(format!(
                        "the {method} result is not a page with a `{key}` array: {error}"
                    ))
                })?;
            drop(text);
            if let Some(kind) = page.result_type.as_ref().filter(|kind| !kind.is_null()) {
                if kind != "complete" {
                    return Err(Error::Protocol(format!(
                        "the {method} result has resultType {kind}, not a list"
                    )));
                }
            }
            let page_items = page.items.ok_or_else(|| {
                Error::Protocol(format!("the {method} result has no `{key}` array"))
            })?;
            if items.len() + page_items.len() > self.config.max_list_items {
                return Err(Error::Protocol(format!(
                    "{method}: the listing has more than {} items; stopping (McpConfig::max_list_items)",
                    self.config.max_list_items
                )));
            }
            items.extend(page_items);
            match page.next_cursor {
                None | Some(Value::Null) => return Ok(items),
                Some(next) => {
                    let text = next.to_string();
                    if !seen_cursors.insert(text.clone()) {
                        return Err(Error::Protocol(format!(
                            "{method}: the server repeated the cursor {text}; stopping"
                        )));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(Error::Protocol(format!(
            "{method}: more than {} pages; stopping (raise McpConfig::max_pages)",
            self.config.max_pages
        )))
    }

    /// A request whose result comes back as JSON text, stamped for the session's era.
    fn request_text(&self, method: &str, params: Value, options: CallOptions) -> Result<String> {
        let session = self.session()?;
        let (stamped, options, _rounds) =
            self.prepare(&session, method, params, options, Vec::new());
        match session
            .rpc
            .call_text(method, stamped.clone(), options.clone())
        {
            // As `send_stamped`: a stateless server that refuses the version it supports is
            // asked once more, under a new id.
            Err(error)
                if session.is_stateless() && super::session::refused_for_stateless(&error) =>
            {
                log::debug!("toolwire: `{method}` was refused ({error}); sending it again");
                session.rpc.call_text(method, stamped, options)
            }
            other => other,
        }
    }
}

/// One listed item's text as a `Value`.
pub(super) fn item_text(raw: &RawValue) -> Result<Value> {
    serde_json::from_str(raw.get())
        .map_err(|error| Error::Protocol(format!("a listed item that cannot be read: {error}")))
}
