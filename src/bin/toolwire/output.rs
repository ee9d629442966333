//! What the commands print on stdout: servers, session info, the tool table, tool results.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};
use toolwire::config::ServerEntry;
use toolwire::mcp::{Era, SessionInfo};
use toolwire::transport::mask_url;
use toolwire::{CallToolResult, Content, Tool};

use crate::configs::Loaded;
use crate::terminal;

/// What a header value (a secret) shows as.
const SECRET_SHOWN: &str = "***";
/// The widest a description column gets before it is cut.
const DESCRIPTION_CHARS: usize = 72;
/// The widest an arguments column gets before it is cut.
const ARGUMENTS_CHARS: usize = 48;

/// Writes human text to stdout, its control characters shown escaped (see
/// [`crate::terminal`]). A closed stdout (`toolwire tools | head`) is not worth a panic: what
/// cannot be written is dropped.
pub fn emit(text: &str) {
    write_stdout(&terminal::shown(text));
}

/// Writes human text to stderr, its control characters shown escaped, dropping what a closed
/// stderr cannot take.
pub fn emit_err(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr()
        .lock()
        .write_all(terminal::shown(text).as_bytes());
}

/// Writes bytes to stdout as they are (a completion script).
pub fn write_raw(bytes: &[u8]) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(bytes).and_then(|()| stdout.flush());
}

/// Writes a JSON document to stdout: exact JSON, with no raw control character.
pub fn emit_json(value: &Value) {
    let mut text = terminal::json_pretty(value);
    text.push('\n');
    write_stdout(&text);
}

fn write_stdout(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// One word for an era, for JSON and the transcript.
pub fn era_word(era: Era) -> &'static str {
    match era {
        Era::Handshake => "handshake",
        Era::Stateless => "stateless",
    }
}

/// A short duration for people: `850 µs`, `12.3 ms`, `1.20 s`.
pub fn duration(elapsed: Duration) -> String {
    let micros = elapsed.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.1} ms", micros / 1000.0)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

/// One entry of `servers`: a URL masked (`user:***@`), header names with `***` for values.
struct ServerRow {
    name: String,
    kind: &'static str,
    detail: String,
    headers: Option<Vec<String>>,
}

/// `servers`: the entries of a config file. A URL's password and every header value are
/// secrets: they show as `***` (see [`toolwire::transport::mask_url`]).
pub fn print_servers(loaded: &Loaded, json: bool) {
    let configs = &loaded.configs;
    let path = &loaded.path;
    let mut rows: Vec<ServerRow> = configs
        .names()
        .map(|name| {
            let (kind, detail, headers) = match configs.get(name) {
                Some(ServerEntry::Stdio(stdio)) => ("stdio", stdio.command_line(), None),
                Some(ServerEntry::Http { url, headers }) => (
                    "http",
                    mask_url(url),
                    Some(headers.iter().map(|(name, _)| name.clone()).collect()),
                ),
                Some(ServerEntry::Sse { url, headers }) => (
                    "sse",
                    mask_url(url),
                    Some(headers.iter().map(|(name, _)| name.clone()).collect()),
                ),
                Some(ServerEntry::WebSocket { url, headers }) => (
                    "websocket",
                    mask_url(url),
                    Some(headers.iter().map(|(name, _)| name.clone()).collect()),
                ),
                Some(ServerEntry::Socket(socket)) => ("socket", socket.address().to_string(), None),
                _ => ("?", String::new(), None),
            };
            ServerRow {
                name: name.to_owned(),
                kind,
                detail,
                headers,
            }
        })
        .collect();
    let skipped: Vec<(String, String)> = configs
        .rejected()
        .map(|(name, reason)| {
            let short = crate::configs::short_reason(configs, name, reason);
            (name.to_owned(), short.to_owned())
        })
        .collect();
    if json {
        let servers: Vec<Value> = rows
            .iter()
            .map(|row| {
                let key = if row.kind == "stdio" {
                    "command"
                } else {
                    "url"
                };
                let mut entry = json!({"name": row.name, "transport": row.kind, key: row.detail});
                if let Some(headers) = &row.headers {
                    let masked: serde_json::Map<String, Value> = headers
                        .iter()
                        .map(|name| (name.clone(), Value::from(SECRET_SHOWN)))
                        .collect();
                    entry["headers"] = Value::Object(masked);
                }
                entry
            })
            .collect();
        let skipped: Vec<Value> = skipped
            .iter()
            .map(|(name, reason)| json!({"name": name, "error": reason}))
            .collect();
        let mut document = json!({"file": path.display().to_string(),
                              "format": configs.format().to_string(), "servers": servers,
                              "skipped": skipped});
        if let Some(place) = &loaded.place {
            document["scope"] = json!(place.scope.to_string());
            document["searched"] = json!(true);
            document["others"] = loaded
                .others
                .iter()
                .map(|(place, names)| {
                    json!({"file": place.path.display().to_string(),
                           "format": place.format.to_string(),
                           "scope": place.scope.to_string(), "servers": names})
                })
                .collect();
        }
        emit_json(&document);
        return;
    }
    let count = rows.len();
    let mut summary = format!(
        "{} ({} format, {count} server{}",
        path.display(),
        configs.format(),
        if count == 1 { "" } else { "s" }
    );
    if !skipped.is_empty() {
        let _ = write!(summary, ", {} skipped", skipped.len());
    }
    summary.push(')');
    outln!("{summary}");
    if let Some(place) = &loaded.place {
        outln!(
            "read because no --config was given: the first of the hosts' places with servers \
             ({} {} scope)",
            place.format,
            place.scope
        );
    }
    // A skipped entry keeps its row, marked, with what is wrong with it.
    for (name, reason) in &skipped {
        rows.push(ServerRow {
            name: name.clone(),
            kind: "SKIPPED",
            detail: reason.clone(),
            headers: None,
        });
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let table: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| {
            let mut detail = row.detail;
            for name in row.headers.iter().flatten() {
                let _ = write!(detail, "  {name}: {SECRET_SHOWN}");
            }
            vec![row.name, row.kind.to_owned(), detail]
        })
        .collect();
    out!(
        "{}",
        render_table(&["NAME", "TRANSPORT", "COMMAND / URL"], &table)
    );
    for (place, names) in &loaded.others {
        outln!(
            "also found: {} with {} (--server NAME finds a server in any of these places)",
            place.describe(),
            if names.is_empty() {
                "no usable server".to_owned()
            } else {
                names.join(", ")
            }
        );
    }
}

/// `info`: server, protocol version and era, capabilities, instructions.
pub fn print_info(
    info: &SessionInfo,
    json: bool,
    authorization: Option<&toolwire::auth::AuthStatus>,
) {
    if json {
        let mut document = json!({
            "server": {"name": info.server.name, "version": info.server.version,
                       "title": info.server.title},
            "protocolVersion": info.protocol_version,
            "era": era_word(info.era),
            "capabilities": info.capabilities,
            "instructions": info.instructions,
        });
        if let Some(status) = authorization {
            document["authorization"] = crate::auth::status_json(status);
        }
        emit_json(&document);
        return;
    }
    let mut server = format!("{} {}", info.server.name, info.server.version);
    if let Some(title) = &info.server.title {
        let _ = write!(server, " ({title})");
    }
    outln!("server:       {server}");
    outln!("protocol:     {}", info.protocol_version);
    outln!("era:          {}", info.era);
    if let Some(status) = authorization {
        // Never the token: whether, as whom, until when.
        let summary = if status.authorized || status.authorizations > 0 {
            crate::auth::summary(status)
        } else {
            "none needed".to_owned()
        };
        outln!("authorization: {}", crate::terminal::shown(&summary));
    }
    match info.capabilities.as_object() {
        Some(capabilities) if !capabilities.is_empty() => {
            outln!("capabilities:");
            for (name, value) in capabilities {
                let detail = match value.as_object() {
                    Some(object) if !object.is_empty() => format!(" {value}"),
                    _ => String::new(),
                };
                outln!("  {name}{detail}");
            }
        }
        _ => outln!("capabilities: none"),
    }
    if let Some(instructions) = &info.instructions {
        outln!("instructions:");
        for line in instructions.lines() {
            outln!("  {line}");
        }
    }
}

/// `tools`: a table of name, arguments and description, or the definitions as JSON.
pub fn print_tools(tools: &[Tool], json: bool) {
    if json {
        let raw: Vec<Value> = tools.iter().map(tool_json).collect();
        emit_json(&json!(raw));
        return;
    }
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            let description = tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
                .unwrap_or("");
            let arguments = match tool.input_schema() {
                Ok(schema) if tool.schema_problem().is_none() => arguments_summary(&schema),
                _ => format!("(unusable: {})", unusable(tool)),
            };
            // Cut what will be shown, so the limits hold for the escaped text.
            vec![
                tool.name.clone(),
                cut(&terminal::shown_line(&arguments), ARGUMENTS_CHARS),
                cut(&terminal::shown_line(description), DESCRIPTION_CHARS),
            ]
        })
        .collect();
    out!(
        "{}",
        render_table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows)
    );
    outln!(
        "{} tool{}",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" }
    );
}

/// The note under `tools` when some tools seem to use what the command declares (roots,
/// sampling, elicitation): some servers (server-everything) list such tools only to a client
/// that declares the capability, so a client that declares fewer lists fewer. `None` when no
/// tool's name or description mentions them.
pub fn capability_note(tools: &[Tool]) -> Option<String> {
    const WORDS: [&str; 3] = ["sampling", "elicit", "roots"];
    let named: Vec<String> = tools
        .iter()
        .filter(|tool| {
            let text = format!(
                "{} {}",
                tool.name,
                tool.description.as_deref().unwrap_or("")
            )
            .to_lowercase();
            WORDS.iter().any(|word| text.contains(word))
        })
        .map(|tool| terminal::shown_line(&tool.name).into_owned())
        .collect();
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "toolwire: note: toolwire declares the roots, sampling and elicitation capabilities, \
         and some servers list the tools that use them only to a client that declares them: \
         {} may be missing from a client that declares fewer (the MCP Inspector, say)",
        named.join(", ")
    ))
}

/// Why a tool cannot be used (its schema cannot be read or is over a bound).
pub fn unusable(tool: &Tool) -> String {
    match (tool.schema_problem(), tool.raw()) {
        (Some(problem), _) => problem.to_owned(),
        (None, Err(error)) => error.to_string(),
        (None, Ok(_)) => String::new(),
    }
}

/// A tool for `--json`: its definition as the server sent it; for an unusable one, its name
/// and why (never `null`, nor a definition whose schema nothing here can apply).
pub fn tool_json(tool: &Tool) -> Value {
    match tool.raw() {
        Ok(raw) if tool.schema_problem().is_none() => raw,
        _ => {
            let mut shown = serde_json::Map::new();
            shown.insert("name".into(), json!(tool.name));
            if let Some(title) = &tool.title {
                shown.insert("title".into(), json!(title));
            }
            if let Some(description) = &tool.description {
                shown.insert("description".into(), json!(description));
            }
            shown.insert("unusable".into(), json!(unusable(tool)));
            Value::Object(shown)
        }
    }
}

/// `a: number, b?: string`: the declared properties, `?` marking the optional ones.
fn arguments_summary(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let mark = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{mark}: {}", type_name(property))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn type_name(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ if property.get("enum").is_some() => "enum".into(),
        _ => {
            for key in ["anyOf", "oneOf"] {
                if let Some(branches) = property.get(key).and_then(Value::as_array) {
                    return branches.iter().map(type_name).collect::<Vec<_>>().join("|");
                }
            }
            "any".into()
        }
    }
}

pub fn cut(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(limit - 1).collect();
        cut.push('…');
        cut
    }
}

/// Left-aligned columns separated by two spaces; the last column is not padded. A cell is one
/// line: its control characters, newline and tab included, are shown escaped.
pub fn render_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| terminal::shown_line(cell).into_owned())
                .collect()
        })
        .collect();
    let rows = rows.as_slice();
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|title| (*title).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            if index == last {
                line.push_str(cell);
            } else {
                let pad = widths[index] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `call --json`: the whole result.
pub fn print_result_json(result: &CallToolResult) {
    // A call that ran as a task names it where the protocol does: the related-task `_meta`.
    if let (Some(task_id), Value::Object(raw)) = (&result.task_id, &result.raw) {
        let mut raw = raw.clone();
        let meta = raw
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(meta) = meta {
            meta.entry("io.modelcontextprotocol/related-task")
                .or_insert_with(|| serde_json::json!({"taskId": task_id}));
        }
        return emit_json(&Value::Object(raw));
    }
    emit_json(&result.raw);
}

/// `call`: each content block readably. Text as text; images and audio as one line with the
/// MIME type and size; resource links and resources as `uri` lines (a text resource's text
/// follows its line). A result with only `structuredContent` prints it as JSON.
pub fn print_result(result: &CallToolResult) {
    let mut out = String::new();
    for block in &result.content {
        render_block(&mut out, block);
    }
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            out.push_str(&terminal::json_pretty(structured));
            out.push('\n');
        }
    }
    out!("{out}");
}

/// One content block, readably (see [`print_result`]).
pub fn render_block(out: &mut String, block: &Content) {
    {
        match block {
            Content::Text { text } => {
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            Content::Image { data, mime_type } => {
                let _ = writeln!(out, "[image {mime_type}, {}]", size(base64_len(data)));
            }
            Content::Audio { data, mime_type } => {
                let _ = writeln!(out, "[audio {mime_type}, {}]", size(base64_len(data)));
            }
            Content::ResourceLink { uri, name, raw } => {
                let mut details = vec![name.clone()];
                if let Some(mime) = raw.get("mimeType").and_then(Value::as_str) {
                    details.push(mime.to_owned());
                }
                if let Some(bytes) = raw.get("size").and_then(Value::as_u64) {
                    details.push(size(bytes));
                }
                let _ = writeln!(out, "[resource link] {uri} ({})", details.join(", "));
            }
            Content::Resource {
                uri,
                mime_type,
                text,
                blob,
            } => {
                let mut details = Vec::new();
                if let Some(mime) = mime_type {
                    details.push(mime.clone());
                }
                if let Some(text) = text {
                    details.push(size(text.len() as u64));
                } else if let Some(blob) = blob {
                    details.push(size(base64_len(blob)));
                }
                let details = if details.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", details.join(", "))
                };
                let _ = writeln!(out, "[resource] {uri}{details}");
                if let Some(text) = text {
                    out.push_str(text);
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                }
            }
            Content::Unknown(value) => {
                let kind = value.get("type").and_then(Value::as_str).unwrap_or("?");
                let _ = writeln!(out, "[{kind} content] {value}");
            }
            _ => {
                let _ = writeln!(out, "[content of an unknown kind]");
            }
        }
    }
}

/// The decoded size of base64 text.
pub fn base64_len(data: &str) -> u64 {
    let clean = data.bytes().filter(|b| !b.is_ascii_whitespace()).count() as u64;
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count() as u64;
    (clean / 4 * 3 + (clean % 4).saturating_sub(1)).saturating_sub(padding)
}

/// `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let value = bytes as f64;
    if value < KIB {
        format!("{bytes} B")
    } else if value < KIB * KIB {
        format!("{:.1} KiB", value / KIB)
    } else {
        format!("{:.1} MiB", value / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("QQ=="), 1);
        assert_eq!(base64_len("QUI="), 2);
        assert_eq!(base64_len("QUJD"), 3);
        assert_eq!(base64_len("QUJDRA"), 4);
        assert_eq!(size(2048), "2.0 KiB");
    }

    #[test]
    fn argument_summaries_mark_optional_fields() {
        let schema = json!({"type": "object", "required": ["ms"], "properties": {
            "ms": {"type": "integer"}, "progress": {"type": "integer"},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}]}}});
        assert_eq!(
            arguments_summary(&schema),
            "ms: integer, opt?: string|null, progress?: integer"
        );
    }

    #[test]
    fn tables_align() {
        let rows = vec![vec!["a".to_owned(), "bb".to_owned(), "c".to_owned()]];
        assert_eq!(
            render_table(&["X", "Y", "Z"], &rows),
            "X  Y   Z\na  bb  c\n"
        );
    }
}
