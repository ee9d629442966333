//! rmcp 3.11.0's server answering one `echo` tool, for the servers side by side
//! (`toolwire-compare servers`). The handler implements `ServerHandler::list_tools` and
//! `call_tool` by hand (no `#[tool]` macros, so no schema generation nor typed parameters:
//! the least work rmcp can do per call). It runs on `#[tokio::main]`'s runtime, whose worker
//! count follows the CPUs the process may use (one, pinned).
//!
//! ```text
//! rmcp_server stdio                 # rmcp::transport::stdio(): tokio's Stdin/Stdout (blocking pool)
//! rmcp_server pipes                 # rmcp::transport::stdio_pipes(): the same pipes on tokio's reactor
//! rmcp_server http-stateless PORT   # StreamableHttpService, legacy_session_mode off, json_response on
//! rmcp_server http-sessions PORT    # StreamableHttpService with sessions (LocalSessionManager)
//! ```
//!
//! HTTP runs on axum 0.8 (`axum::serve`), as rmcp's own examples and tests do, with
//! `TCP_NODELAY` set on its connections (`ListenerExt::tap_io`).

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
}

impl Echo {
    fn new() -> Echo {
        let schema = serde_json::json!({"type": "object", "required": ["message"],
            "properties": {"message": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Echo {
            tools: Arc::new(vec![Tool::new(
                "echo",
                "Returns the message it is given.",
                schema,
            )]),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != "echo" {
            return Err(McpError::invalid_params("unknown tool", None));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("message"))
            .and_then(|message| message.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("stdio");
    match mode {
        "stdio" => {
            let running = Echo::new()
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve");
            let _ = running.waiting().await;
        }
        "pipes" => {
            let running = Echo::new()
                .serve(rmcp::transport::stdio_pipes())
                .await
                .expect("serve");
            let _ = running.waiting().await;
        }
        "http-stateless" | "http-sessions" => {
            let port: u16 = args
                .get(1)
                .and_then(|port| port.parse().ok())
                .expect("a port");
            let config = if mode == "http-sessions" {
                StreamableHttpServerConfig::default()
            } else {
                StreamableHttpServerConfig::default()
                    .with_legacy_session_mode(false)
                    .with_json_response(true)
            };
            let service = StreamableHttpService::new(
                || Ok(Echo::new()),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            // TCP_NODELAY on every connection, as toolwire's server and the load client set
            // it: without it a session's event stream, written in pieces, waits on Nagle's
            // algorithm and the client's delayed ACK (about 33 ms a call here).
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .expect("bind")
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            axum::serve(listener, router).await.expect("serve");
        }
        other => panic!("unknown mode {other}"),
    }
}
