//! The HTTP requests of the flow (metadata, registration, tokens), on a ureq agent of their
//! own: redirects never followed (a token request must not be forwarded, and the conformance
//! authorizer reads the `Location` itself), every status handed back, bodies bounded.

use std::io::Read;
use std::time::Duration;

use crate::error::{AuthErrorKind, Error, Result};
use crate::mask::mask_url;

/// One answer, read whole within the bound.
#[derive(Clone)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    pub(crate) dpop_nonce: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) www_authenticate: Vec<String>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Bodies of token endpoints hold tokens: never shown.
        f.debug_struct("Answer")
            .field("status", &self.status)
            .field("body_bytes", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl Answer {
    pub(crate) fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON, when it is.
    pub(crate) fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The OAuth error of an error answer (`error`, `error_description`), for messages:
    /// bounded, never the body itself.
    pub(crate) fn oauth_error(&self) -> String {
        let json = self.json();
        let field = |name: &str| {
            json.as_ref()
                .and_then(|value| value.get(name))
                .and_then(serde_json::Value::as_str)
                .map(|text| super::util::shown(text, 200))
        };
        match (field("error"), field("error_description")) {
            (Some(error), Some(description)) => {
                format!("HTTP {} `{error}`: {description}", self.status)
            }
            (Some(error), None) => format!("HTTP {} `{error}`", self.status),
            _ => format!("HTTP {}", self.status),
        }
    }
}

/// The agent and bounds of the flow's requests.
#[derive(Clone)]
pub(crate) struct FlowHttp {
    agent: ureq::Agent,
    max_body: usize,
}

impl FlowHttp {
    pub(crate) fn new(timeout: Duration, max_body: usize) -> FlowHttp {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(format!("toolwire/{}", env!("CARGO_PKG_VERSION")))
            .timeout_global(Some(timeout))
            .build();
        FlowHttp {
            agent: ureq::Agent::new_with_config(config),
            max_body,
        }
    }

    fn read(
        &self,
        response: ureq::http::Response<ureq::Body>,
        url: &str,
        kind: AuthErrorKind,
    ) -> Result<Answer> {
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let dpop_nonce = header("dpop-nonce");
        let location = header("location");
        let www_authenticate = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .collect();
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(self.max_body as u64 + 1)
            .read_to_end(&mut body)
            .map_err(|error| {
                Error::auth_error(
                    kind,
                    format!("reading the answer of {}: {error}", mask_url(url)),
                )
            })?;
        if body.len() > self.max_body {
            return Err(Error::auth_error(
                kind,
                format!(
                    "the answer of {} is larger than {} bytes (OAuthConfig::max_document_bytes)",
                    mask_url(url),
                    self.max_body
                ),
            ));
        }
        Ok(Answer {
            status,
            body,
            dpop_nonce,
            location,
            www_authenticate,
        })
    }

    fn failed(url: &str, kind: AuthErrorKind, error: &ureq::Error) -> Error {
        // ureq's message may quote the URL: masked like every URL we show.
        let text = crate::mask::mask_urls_in(&error.to_string()).into_owned();
        Error::auth_error(
            kind,
            format!("{} could not be reached: {text}", mask_url(url)),
        )
    }

    /// GET with `Accept: application/json` (and any extra headers).
    pub(crate) fn get(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        kind: AuthErrorKind,
    ) -> Result<Answer> {
        let mut request = self.agent.get(url).header("Accept", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request
            .call()
            .map_err(|error| Self::failed(url, kind, &error))?;
        self.read(response, url, kind)
    }

    /// POST of a form.
    pub(crate) fn post_form(
        &self,
        url: &str,
        form: &str,
        headers: &[(&str, String)],
        kind: AuthErrorKind,
    ) -> Result<Answer> {
        let types = ("application/x-www-form-urlencoded", "application/json");
        self.post(url, form, types, headers, kind)
    }

    /// POST of a JSON body.
    pub(crate) fn post_json(
        &self,
        url: &str,
        body: &str,
        headers: &[(&str, String)],
        kind: AuthErrorKind,
    ) -> Result<Answer> {
        let types = ("application/json", "application/json, text/event-stream");
        self.post(url, body, types, headers, kind)
    }

    /// POST of `body` with its `(Content-Type, Accept)` and the extra headers.
    fn post(
        &self,
        url: &str,
        body: &str,
        (content_type, accept): (&str, &str),
        headers: &[(&str, String)],
        kind: AuthErrorKind,
    ) -> Result<Answer> {
        let mut request = self
            .agent
            .post(url)
            .header("Content-Type", content_type)
            .header("Accept", accept);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let response = request
            .send(body.as_bytes())
            .map_err(|error| Self::failed(url, kind, &error))?;
        self.read(response, url, kind)
    }
}
