//! The catalog commands: `tools NAME`, `resources`, `templates`, `read`, `skills`, `prompts`,
//! `prompt`, `complete` and `log-level`. Each checks first that the server declares the capability,
//! so a server without it gets no request and the user a sentence instead of a -32601.

use std::fmt::Write as _;

use serde_json::{json, Value};
use toolwire::mcp::SkillResources;
use toolwire::McpClient;

use crate::cli::{Command, McpLevel};
use crate::output::{cut, emit_json, render_block, render_table};
use crate::{args, terminal, Exit, Failure};

/// The widest a description column gets before it is cut.
const DESCRIPTION_CHARS: usize = 72;

/// Runs a catalog command; `None` for a command that is not one.
pub fn run(command: &Command, client: &McpClient) -> Option<Result<Exit, Failure>> {
    let outcome = match command {
        Command::Tools {
            name: Some(name),
            json,
            ..
        } => tool(client, name, *json),
        Command::Resources { json, .. } => resources(client, *json),
        Command::Templates { json, .. } => templates(client, *json),
        Command::Read { uri, json, .. } => read(client, uri, *json),
        Command::Skills { name, json, .. } => skills(client, name.as_deref(), *json),
        Command::Prompts { json, .. } => prompts(client, *json),
        Command::Prompt {
            name, args, json, ..
        } => prompt(client, name, args, *json),
        Command::Complete {
            prompt,
            template,
            argument,
            value,
            json,
            ..
        } => complete(
            client,
            prompt.as_deref(),
            template.as_deref(),
            argument,
            value,
            *json,
        ),
        Command::LogLevel { level, .. } => log_level(client, *level),
        _ => return None,
    };
    Some(outcome.map(|()| Exit::Ok))
}

/// Fails unless the server declares `capability`.
fn require(client: &McpClient, capability: &str, what: &str) -> Result<(), Failure> {
    let info = client
        .session_info()
        .map_err(|error| Failure::from_error("reading the session", &error))?;
    let declared = info.capabilities.as_object();
    if declared.is_some_and(|capabilities| capabilities.contains_key(capability)) {
        return Ok(());
    }
    let names: Vec<&str> = declared
        .map(|capabilities| capabilities.keys().map(String::as_str).collect())
        .unwrap_or_default();
    Err(Failure {
        exit: Exit::Transport,
        message: format!(
            "{} {} does not offer {what}: it declares no `{capability}` capability (it \
             declares: {}); nothing was asked",
            info.server.name,
            info.server.version,
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
        login_required: false,
    })
}

fn first_line(text: Option<&str>) -> &str {
    text.and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
        .unwrap_or("")
}

fn count(n: usize, one: &str, many: &str) {
    outln!("{n} {}", if n == 1 { one } else { many });
}

/// `tools NAME`: one tool's whole definition.
fn tool(client: &McpClient, name: &str, json: bool) -> Result<(), Failure> {
    let tools = client
        .list_tools()
        .map_err(|error| Failure::from_error("listing the tools", &error))?;
    let Some(tool) = tools.iter().find(|tool| tool.name == name) else {
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        return Err(Failure::usage(format!(
            "the server has no tool named `{name}` (it has: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    if json {
        emit_json(&crate::output::tool_json(tool));
        return Ok(());
    }
    let usable = match (tool.raw(), tool.input_schema()) {
        (Ok(raw), Ok(schema)) if tool.schema_problem().is_none() => Some((raw, schema)),
        _ => None,
    };
    let mut out = format!("name:         {}\n", tool.name);
    if let Some(title) = &tool.title {
        let _ = writeln!(out, "title:        {title}");
    }
    if let Some(description) = &tool.description {
        out.push_str("description:\n");
        for line in description.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let Some((raw, schema)) = usable else {
        let _ = writeln!(out, "unusable:     {}", crate::output::unusable(tool));
        out!("{out}");
        return Ok(());
    };
    let _ = writeln!(out, "{}", args::signature(&tool.name, &schema));
    if let Some(annotations) = raw.get("annotations").and_then(Value::as_object) {
        let shown: Vec<String> = annotations
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let _ = writeln!(out, "annotations:  {}", shown.join(", "));
    }
    if let Some(execution) = raw.get("execution") {
        let _ = writeln!(out, "execution:    {execution}");
    }
    out.push_str("input schema:\n");
    for line in terminal::json_pretty(&schema).lines() {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(output) = raw.get("outputSchema") {
        out.push_str("output schema:\n");
        for line in terminal::json_pretty(output).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out!("{out}");
    Ok(())
}

fn resources(client: &McpClient, json: bool) -> Result<(), Failure> {
    require(client, "resources", "resources")?;
    let resources = client
        .list_resources()
        .map_err(|error| Failure::from_error("listing the resources", &error))?;
    let rows = resources.iter().map(|item| {
        let fields = (&item.uri, &item.name, item.mime_type.as_deref());
        (&item.raw, fields, item.description.as_deref())
    });
    print_resource_rows("URI", rows, json, ("resource", "resources"));
    Ok(())
}

fn templates(client: &McpClient, json: bool) -> Result<(), Failure> {
    require(client, "resources", "resource templates")?;
    let templates = client
        .list_resource_templates()
        .map_err(|error| Failure::from_error("listing the resource templates", &error))?;
    let rows = templates.iter().map(|item| {
        let fields = (&item.uri_template, &item.name, item.mime_type.as_deref());
        (&item.raw, fields, item.description.as_deref())
    });
    print_resource_rows("URI TEMPLATE", rows, json, ("template", "templates"));
    Ok(())
}

/// Resources or templates: the raw definitions as JSON, or a table of (URI or template,
/// name, MIME type, description) and the count.
fn print_resource_rows<'a>(
    first_column: &str,
    items: impl Iterator<
        Item = (
            &'a Value,
            (&'a String, &'a String, Option<&'a str>),
            Option<&'a str>,
        ),
    >,
    json: bool,
    (one, many): (&str, &str),
) {
    let items: Vec<_> = items.collect();
    if json {
        let raw: Vec<Value> = items.iter().map(|(raw, _, _)| (*raw).clone()).collect();
        emit_json(&json!(raw));
        return;
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|(_, (uri, name, mime), description)| {
            vec![
                (*uri).clone(),
                (*name).clone(),
                mime.unwrap_or_default().to_owned(),
                cut(
                    &terminal::shown_line(first_line(*description)),
                    DESCRIPTION_CHARS,
                ),
            ]
        })
        .collect();
    out!(
        "{}",
        render_table(&[first_column, "NAME", "MIME", "DESCRIPTION"], &rows)
    );
    count(items.len(), one, many);
}

fn read(client: &McpClient, uri: &str, json: bool) -> Result<(), Failure> {
    require(client, "resources", "resources")?;
    let contents = client
        .read_resource(uri)
        .map_err(|error| Failure::from_error(&format!("reading {uri}"), &error))?;
    if json {
        let raw: Vec<Value> = contents.iter().map(|item| item.raw.clone()).collect();
        emit_json(&json!({"contents": raw}));
        return Ok(());
    }
    let mut out = String::new();
    // One text item prints as the text alone (for pipes); several get a line each first.
    let labelled = contents.len() > 1 || contents.iter().any(|item| item.text.is_none());
    for item in &contents {
        let mime = item.mime_type.as_deref().unwrap_or("no MIME type");
        match (&item.text, &item.blob) {
            (Some(text), _) => {
                if labelled {
                    let _ = writeln!(out, "[text {mime}] {}", item.uri);
                }
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
            (None, Some(blob)) => {
                let size = crate::output::size(crate::output::base64_len(blob));
                let _ = writeln!(
                    out,
                    "[blob {mime}, {size}] {} (--json shows it in base64)",
                    item.uri
                );
            }
            (None, None) => {}
        }
    }
    out!("{out}");
    Ok(())
}

/// `skills`: the listing (no file read); `skills NAME`: that skill loaded (its SKILL.md read
/// and verified against the listing) and printed, its other files named, not read.
fn skills(client: &McpClient, name: Option<&str>, json: bool) -> Result<(), Failure> {
    let entries = client
        .list_skills()
        .map_err(|error| Failure::from_error("listing the skills", &error))?;
    let Some(name) = name else {
        if json {
            let raw: Vec<Value> = entries.iter().map(|entry| entry.raw.clone()).collect();
            emit_json(&json!(raw));
            return Ok(());
        }
        let rows: Vec<Vec<String>> = entries
            .iter()
            .map(|entry| {
                let files = match &entry.resources {
                    SkillResources::Files(files) => files.len().to_string(),
                    SkillResources::Dynamic => "dynamic".to_owned(),
                };
                vec![
                    entry.name().to_owned(),
                    entry.uri.clone(),
                    files,
                    cut(
                        &terminal::shown_line(first_line(Some(entry.description()))),
                        DESCRIPTION_CHARS,
                    ),
                ]
            })
            .collect();
        out!(
            "{}",
            render_table(&["NAME", "URI", "FILES", "DESCRIPTION"], &rows)
        );
        count(entries.len(), "skill", "skills");
        return Ok(());
    };
    // Two skills of one name are never shadowed: the user picks one by URI.
    let matches: Vec<_> = entries
        .iter()
        .filter(|entry| entry.uri == name || entry.name() == name)
        .collect();
    let entry = match matches.as_slice() {
        [entry] => *entry,
        [] => {
            let names: Vec<&str> = entries.iter().map(|entry| entry.name()).collect();
            return Err(Failure::usage(format!(
                "the server lists no skill named `{name}` (it lists: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        }
        several => {
            let uris: Vec<&str> = several.iter().map(|entry| entry.uri.as_str()).collect();
            return Err(Failure::usage(format!(
                "several skills are named `{name}`; name one by its URI: {}",
                uris.join(", ")
            )));
        }
    };
    let skill = client
        .load_skill(entry)
        .map_err(|error| Failure::from_error(&format!("loading {}", entry.uri), &error))?;
    if json {
        emit_json(&json!({"skill": entry.raw, "skillMd": skill.skill_md()}));
        return Ok(());
    }
    let info = client
        .session_info()
        .map_err(|error| Failure::from_error("reading the session", &error))?;
    errln!(
        "{} from {} {}: SKILL.md verified (size, digest, frontmatter)",
        entry.uri,
        info.server.name,
        info.server.version
    );
    let mut out = skill.skill_md().to_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if let SkillResources::Files(files) = &entry.resources {
        for file in files.iter().filter(|file| file.uri != entry.uri) {
            let _ = writeln!(
                out,
                "[file, {}, not read] {}",
                crate::output::size(file.size),
                file.uri
            );
        }
    }
    out!("{out}");
    Ok(())
}

fn prompts(client: &McpClient, json: bool) -> Result<(), Failure> {
    require(client, "prompts", "prompts")?;
    let prompts = client
        .list_prompts()
        .map_err(|error| Failure::from_error("listing the prompts", &error))?;
    if json {
        let raw: Vec<Value> = prompts.iter().map(|item| item.raw.clone()).collect();
        emit_json(&json!(raw));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = prompts
        .iter()
        .map(|prompt| {
            let arguments: Vec<String> = prompt
                .arguments
                .iter()
                .map(|argument| {
                    format!(
                        "{}{}",
                        argument.name,
                        if argument.required { "" } else { "?" }
                    )
                })
                .collect();
            vec![
                prompt.name.clone(),
                arguments.join(", "),
                cut(
                    &terminal::shown_line(first_line(prompt.description.as_deref())),
                    DESCRIPTION_CHARS,
                ),
            ]
        })
        .collect();
    out!(
        "{}",
        render_table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows)
    );
    count(prompts.len(), "prompt", "prompts");
    Ok(())
}

fn prompt(client: &McpClient, name: &str, raw: &[String], json: bool) -> Result<(), Failure> {
    require(client, "prompts", "prompts")?;
    let prompts = client
        .list_prompts()
        .map_err(|error| Failure::from_error("listing the prompts", &error))?;
    let Some(prompt) = prompts.iter().find(|prompt| prompt.name == name) else {
        let names: Vec<&str> = prompts.iter().map(|prompt| prompt.name.as_str()).collect();
        return Err(Failure::usage(format!(
            "the server has no prompt named `{name}` (it has: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    let usage = {
        let mut usage = format!("usage: toolwire prompt {name}");
        for argument in &prompt.arguments {
            if argument.required {
                let _ = write!(usage, " {}=<text>", argument.name);
            } else {
                let _ = write!(usage, " [{}=<text>]", argument.name);
            }
        }
        for argument in &prompt.arguments {
            let _ = write!(
                usage,
                "\n  {}{}{}",
                argument.name,
                if argument.required { ", required" } else { "" },
                argument
                    .description
                    .as_deref()
                    .map(|text| format!(" — {}", first_line(Some(text))))
                    .unwrap_or_default()
            );
        }
        usage
    };
    let mut arguments = serde_json::Map::new();
    for pair in raw {
        let Some((key, value)) = pair.split_once('=').filter(|(key, _)| !key.is_empty()) else {
            return Err(Failure::usage(format!(
                "the arguments of prompt `{name}`: `{pair}` is not key=value\n{usage}"
            )));
        };
        if arguments.insert(key.to_owned(), json!(value)).is_some() {
            return Err(Failure::usage(format!(
                "the arguments of prompt `{name}`: `{key}` is given twice\n{usage}"
            )));
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|argument| argument.required && !arguments.contains_key(&argument.name))
        .map(|argument| argument.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "the prompt `{name}` needs {}; nothing was asked\n{usage}",
            missing
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let result = client
        .get_prompt(name, Value::Object(arguments))
        .map_err(|error| Failure::from_error(&format!("getting the prompt `{name}`"), &error))?;
    if json {
        emit_json(&result.raw);
        return Ok(());
    }
    let mut out = String::new();
    if let Some(description) = &result.description {
        let _ = writeln!(out, "# {description}");
    }
    for message in &result.messages {
        let _ = writeln!(out, "[{}]", message.role);
        render_block(&mut out, &message.content);
    }
    out!("{out}");
    Ok(())
}

fn complete(
    client: &McpClient,
    prompt: Option<&str>,
    template: Option<&str>,
    argument: &str,
    value: &str,
    json: bool,
) -> Result<(), Failure> {
    require(client, "completions", "completion")?;
    let reference = match (prompt, template) {
        (Some(name), _) => json!({"type": "ref/prompt", "name": name}),
        (None, Some(uri)) => json!({"type": "ref/resource", "uri": uri}),
        (None, None) => {
            return Err(Failure::usage(
                "complete: give --prompt NAME or --template URI_TEMPLATE",
            ))
        }
    };
    let completion = client
        .complete(reference, argument, value)
        .map_err(|error| Failure::from_error(&format!("completing `{argument}`"), &error))?;
    if json {
        emit_json(&completion.raw);
        return Ok(());
    }
    let mut out = String::new();
    for value in &completion.values {
        let _ = writeln!(out, "{}", terminal::shown_line(value));
    }
    out!("{out}");
    if completion.has_more {
        let total = completion
            .total
            .map(|total| format!(" of {total}"))
            .unwrap_or_default();
        errln!(
            "toolwire: {}{total} shown; the server has more",
            completion.values.len()
        );
    }
    Ok(())
}

fn log_level(client: &McpClient, level: McpLevel) -> Result<(), Failure> {
    require(client, "logging", "log messages")?;
    let name = level.name();
    client
        .set_logging_level(name)
        .map_err(|error| Failure::from_error("setting the log level", &error))?;
    let stateless = client
        .session_info()
        .is_ok_and(|info| info.era == toolwire::mcp::Era::Stateless);
    if stateless {
        outln!(
            "log level {name}: a 2026-07-28 server is told with each request (--server-log \
             sets it for a command)"
        );
    } else {
        outln!("the server now sends log messages at {name} and above");
    }
    Ok(())
}
