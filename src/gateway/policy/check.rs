//! The policy's names checked against what they name: the config's servers, and each
//! backend's listing (fail closed: a name that matches nothing is most likely a typo, and its
//! rule would silently not apply).

use super::Policy;
use crate::error::{Error, Result};

/// The most of a backend's names a [`PolicyMismatch`] shows.
const MAX_SHOWN: usize = 20;

/// A name in a server's `deny`, `allow` or `tools` that its backend does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// The policy's list that has it: `deny`, `allow` or `tools`.
    pub list: &'static str,
    /// The name as the policy writes it.
    pub name: String,
    /// The backend's name closest to it, when one is close enough to be what was meant.
    pub did_you_mean: Option<String>,
}

/// A backend's listing that the policy's names do not match: its `deny`, `allow` or `tools`
/// names something the backend does not list (a typo, most likely), so the rules would not
/// do what they say. The gateway keeps such a backend out until they match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyMismatch {
    /// The server's name in the config.
    pub server: String,
    /// The names it does not list, in the policy's order of lists (`deny`, `allow`, `tools`).
    pub unknown: Vec<UnknownName>,
    /// What it lists (its tools, then its prompts), at most the first 20.
    pub offered: Vec<String>,
    /// How many it lists in all.
    pub offered_count: usize,
}

impl std::fmt::Display for PolicyMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the policy names what server {} does not list: ",
            crate::json::quote(&self.server)
        )?;
        for (at, unknown) in self.unknown.iter().enumerate() {
            let comma = if at == 0 { "" } else { ", " };
            write!(
                f,
                "{comma}{} {}",
                unknown.list,
                crate::json::quote(&unknown.name)
            )?;
            if let Some(known) = &unknown.did_you_mean {
                write!(f, " (did you mean {}?)", crate::json::quote(known))?;
            }
        }
        if self.offered.is_empty() {
            return write!(f, "; it lists no tools or prompts");
        }
        let shown: Vec<String> = self
            .offered
            .iter()
            .map(|name| crate::json::quote(name))
            .collect();
        write!(f, "; it lists {}", shown.join(", "))?;
        if self.offered_count > self.offered.len() {
            write!(f, " and {} more", self.offered_count - self.offered.len())?;
        }
        Ok(())
    }
}

impl Policy {
    /// Checks that every server the policy names is in `configs` (among its servers or its
    /// rejected entries): a rule for a server that is not there is most likely a typo, and
    /// the real server would be served without it.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming each unknown server, with the config's names and a "did you
    /// mean" where one is close.
    pub fn check_servers(&self, configs: &crate::ServerConfigs) -> Result<()> {
        let mut known: Vec<&str> = configs.names().collect();
        known.extend(configs.rejected().map(|(name, _)| name));
        let unknown: Vec<String> = self
            .servers()
            .filter(|server| !known.contains(server))
            .map(|server| {
                format!(
                    "server {}{}",
                    crate::json::quote(server),
                    crate::suggest::did_you_mean(server, known.iter().copied())
                )
            })
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        known.sort_unstable();
        let names: Vec<String> = known.iter().map(|name| crate::json::quote(name)).collect();
        Err(Error::Config(format!(
            "the policy names {}, which the config ({}) does not have; its servers are {}",
            unknown.join(", "),
            configs.source(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )))
    }

    /// Checks the policy's names for `server` against what its backend lists: each name of
    /// its `deny` and `allow` must be one of its `tools` or `prompts`, and each name of its
    /// `tools` section one of its `tools`.
    ///
    /// # Errors
    ///
    /// The [`PolicyMismatch`] naming each name it does not list, with a "did you mean"
    /// where one of its names is close.
    pub fn check_listing(
        &self,
        server: &str,
        tools: &[&str],
        prompts: &[&str],
    ) -> std::result::Result<(), PolicyMismatch> {
        let Some(rules) = self.servers.get(server) else {
            return Ok(());
        };
        let mut unknown = Vec::new();
        let either = || tools.iter().chain(prompts).copied();
        let mut look = |list: &'static str, name: &String, tools_only: bool| {
            let listed = if tools_only {
                tools.contains(&name.as_str())
            } else {
                either().any(|known| known == name)
            };
            if !listed {
                let did_you_mean = if tools_only {
                    crate::suggest::closest(name, tools.iter().copied())
                } else {
                    crate::suggest::closest(name, either())
                };
                unknown.push(UnknownName {
                    list,
                    name: name.clone(),
                    did_you_mean: did_you_mean.map(str::to_owned),
                });
            }
        };
        for name in &rules.deny {
            look("deny", name, false);
        }
        for name in rules.allow.iter().flatten() {
            look("allow", name, false);
        }
        for name in rules.tools.keys() {
            look("tools", name, true);
        }
        if unknown.is_empty() {
            return Ok(());
        }
        Err(PolicyMismatch {
            server: server.to_owned(),
            unknown,
            offered: either().take(MAX_SHOWN).map(str::to_owned).collect(),
            offered_count: tools.len() + prompts.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_is_checked_against_what_it_may_name() {
        let policy = Policy::parse(
            r#"{"servers": {"files": {"deny": ["writefile", "greet"], "allow": ["read_file"],
                                      "tools": {"raed_file": {}, "greet": {}}}}}"#,
        )
        .unwrap();
        let tools = ["read_file", "write_file"];
        let mismatch = policy
            .check_listing("files", &tools, &["greet"])
            .unwrap_err();
        let unknown: Vec<(&str, &str, Option<&str>)> = mismatch
            .unknown
            .iter()
            .map(|u| (u.list, u.name.as_str(), u.did_you_mean.as_deref()))
            .collect();
        // A prompt may be denied or allowed, but has no `tools` settings.
        assert_eq!(
            unknown,
            [
                ("deny", "writefile", Some("write_file")),
                ("tools", "greet", None),
                ("tools", "raed_file", Some("read_file")),
            ]
        );
        let said = mismatch.to_string();
        assert!(
            said.contains(r#"deny "writefile" (did you mean "write_file"?)"#),
            "{said}"
        );
        assert!(
            said.ends_with(r#"it lists "read_file", "write_file", "greet""#),
            "{said}"
        );
        assert!(policy.check_listing("other", &[], &[]).is_ok());
        let fixed = Policy::parse(r#"{"servers": {"files": {"deny": ["write_file"]}}}"#).unwrap();
        assert!(fixed.check_listing("files", &tools, &[]).is_ok());
    }

    #[test]
    fn a_long_listing_is_cut_in_the_message() {
        let policy =
            Policy::parse(r#"{"servers": {"many": {"deny": ["nothing_like_it"]}}}"#).unwrap();
        let names: Vec<String> = (0..50).map(|at| format!("tool_{at}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mismatch = policy.check_listing("many", &names, &[]).unwrap_err();
        assert_eq!(mismatch.offered.len(), MAX_SHOWN);
        assert!(mismatch.to_string().ends_with("and 30 more"), "{mismatch}");
    }
}
