//! Connecting an MCP client to an entry of a config file. The config reader knows only the
//! transport layer; this is where its entries meet the MCP lifecycle.

use super::{McpClient, McpConfig};
use crate::config::ServerConfigs;
use crate::error::Result;

impl ServerConfigs {
    /// Connects to the server named `name`: starts it (stdio) or opens a session (HTTP), and
    /// runs the MCP lifecycle. With a restart policy, a dead server is started again from the
    /// same entry.
    ///
    /// # Errors
    ///
    /// As [`ServerConfigs::connector`] and [`McpClient::connect_with`].
    pub fn connect(&self, name: &str, config: McpConfig) -> Result<McpClient> {
        McpClient::connect_with(self.connector(name)?, config)
    }
}
