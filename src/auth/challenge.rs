//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), as a server's 401 or 403 sends them.
//!
//! One field may hold several challenges, and a response may hold several fields; a scheme is
//! a token compared without case; its parameters are `name=value` pairs whose value is a
//! token or a quoted string (which may hold `,` and `\` escapes), or a single token68. The
//! parser walks the text once, by hand: splitting on the first space and matching a regular
//! expression (what some SDKs do) loses every challenge but the first and misreads quoted
//! commas. Input is bounded ([`MAX_CHALLENGE_BYTES`], [`MAX_CHALLENGES`], [`MAX_PARAMS`]);
//! what does not parse ends the parse, keeping what was read before it.

/// The most bytes of `WWW-Authenticate` text read, over all fields.
pub const MAX_CHALLENGE_BYTES: usize = 16 * 1024;
/// The most challenges kept.
pub const MAX_CHALLENGES: usize = 16;
/// The most parameters kept per challenge.
pub const MAX_PARAMS: usize = 32;

/// One challenge: a scheme and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// The scheme as sent (`Bearer`, `DPoP`, …); compare with [`Challenge::is`].
    pub scheme: String,
    /// The parameters in order, names in lower case, values unquoted.
    pub params: Vec<(String, String)>,
    /// The token68 form (`Basic dXNlcg==`), when the challenge has one instead of parameters.
    pub token68: Option<String>,
}

impl Challenge {
    /// Whether the scheme is `scheme`, ignoring case.
    pub fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// The first value of parameter `name` (any case).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The `scope` parameter as a set of scopes, in order, without repeats.
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = Vec::new();
        for scope in self.param("scope").unwrap_or("").split_ascii_whitespace() {
            if !scopes.iter().any(|known| known == scope) {
                scopes.push(scope.to_owned());
            }
        }
        scopes
    }
}

/// Every challenge in the field values, in order (see the module documentation).
pub fn parse_challenges<S: AsRef<str>>(fields: &[S]) -> Vec<Challenge> {
    let mut out = Vec::new();
    let mut budget = MAX_CHALLENGE_BYTES;
    for field in fields {
        let field = field.as_ref();
        let take = floor_char_boundary(field, budget.min(field.len()));
        budget -= take;
        Parser {
            text: &field.as_bytes()[..take],
            at: 0,
        }
        .challenges(&mut out);
        if out.len() >= MAX_CHALLENGES || budget == 0 {
            break;
        }
    }
    out.truncate(MAX_CHALLENGES);
    out
}

/// The first `Bearer` or `DPoP` challenge: the ones MCP authorization reads.
pub fn oauth_challenge(challenges: &[Challenge]) -> Option<&Challenge> {
    challenges
        .iter()
        .find(|challenge| challenge.is("Bearer") || challenge.is("DPoP"))
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

/// RFC 9110 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// RFC 9110 `token68` characters (before the trailing `=`s).
fn is_token68_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Option<&str> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        (self.at > start).then(|| std::str::from_utf8(&self.text[start..self.at]).unwrap_or(""))
    }

    /// A quoted string after its opening `"`: the unescaped text, or `None` when it does not
    /// end.
    fn quoted(&mut self) -> Option<String> {
        let mut value = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(String::from_utf8_lossy(&value).into_owned());
                }
                b'\\' => {
                    self.at += 1;
                    value.push(self.peek()?);
                    self.at += 1;
                }
                byte => {
                    value.push(byte);
                    self.at += 1;
                }
            }
        }
    }

    /// Whether a token68 starts here: its characters, then `=`s, then the end or a comma.
    fn token68_ahead(&self) -> Option<usize> {
        let mut end = self.at;
        while self.text.get(end).copied().is_some_and(is_token68_char) {
            end += 1;
        }
        if end == self.at {
            return None;
        }
        while self.text.get(end) == Some(&b'=') {
            end += 1;
        }
        let mut after = end;
        while matches!(self.text.get(after), Some(b' ' | b'\t')) {
            after += 1;
        }
        matches!(self.text.get(after), None | Some(b',')).then_some(end)
    }

    /// Whether `name=` (an auth-param) starts here.
    fn param_ahead(&self) -> bool {
        let mut end = self.at;
        while self.text.get(end).copied().is_some_and(is_tchar) {
            end += 1;
        }
        if end == self.at {
            return false;
        }
        while matches!(self.text.get(end), Some(b' ' | b'\t')) {
            end += 1;
        }
        // `name==` would be a token68 ending in `=`, not a parameter.
        self.text.get(end) == Some(&b'=') && self.text.get(end + 1) != Some(&b'=')
    }

    fn challenges(&mut self, out: &mut Vec<Challenge>) {
        loop {
            self.skip_separators();
            if self.peek().is_none() || out.len() >= MAX_CHALLENGES {
                return;
            }
            let Some(scheme) = self.token().map(str::to_owned) else {
                return;
            };
            let mut challenge = Challenge {
                scheme,
                ..Challenge::default()
            };
            self.skip_ows();
            if !self.param_ahead() {
                if let Some(end) = self.token68_ahead() {
                    let text = &self.text[self.at..end];
                    challenge.token68 = Some(String::from_utf8_lossy(text).into_owned());
                    self.at = end;
                }
            }
            let ended = challenge.token68.is_none() && !self.params(&mut challenge);
            out.push(challenge);
            if ended {
                return;
            }
        }
    }

    /// The parameters of one challenge, up to the next scheme. Returns false when the text
    /// stopped parsing (the rest is dropped).
    fn params(&mut self, challenge: &mut Challenge) -> bool {
        loop {
            self.skip_separators();
            if self.peek().is_none() {
                return true;
            }
            if !self.param_ahead() {
                // A token not followed by `=`: the next challenge's scheme.
                return self.peek().is_some_and(is_tchar);
            }
            let Some(name) = self.token().map(str::to_ascii_lowercase) else {
                return false;
            };
            self.skip_ows();
            self.at += 1; // the `=`
            self.skip_ows();
            let value = match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    match self.quoted() {
                        Some(value) => value,
                        None => return false,
                    }
                }
                _ => self.token().unwrap_or("").to_owned(),
            };
            if challenge.params.len() < MAX_PARAMS {
                challenge.params.push((name, value));
            }
            self.skip_ows();
            match self.peek() {
                None => return true,
                Some(b',') => {}
                Some(_) => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_header_with_every_parameter() {
        let fields = [
            r#"Bearer error="invalid_token", error_description="Missing Authorization header", scope="mcp:basic mcp:read", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#,
        ];
        let parsed = parse_challenges(&fields);
        assert_eq!(parsed.len(), 1);
        let bearer = &parsed[0];
        assert!(bearer.is("bearer"));
        assert_eq!(bearer.param("error"), Some("invalid_token"));
        assert_eq!(bearer.scopes(), ["mcp:basic", "mcp:read"]);
        assert_eq!(
            bearer.param("RESOURCE_METADATA"),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn several_challenges_in_one_field_and_quoted_commas() {
        let fields = [
            r#"Basic realm="a, b", DPoP error="use_dpop_nonce", algs="ES256 PS256", Bearer scope=x"#,
        ];
        let parsed = parse_challenges(&fields);
        let schemes: Vec<&str> = parsed.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "DPoP", "Bearer"]);
        assert_eq!(parsed[0].param("realm"), Some("a, b"));
        assert_eq!(parsed[1].param("algs"), Some("ES256 PS256"));
        assert_eq!(parsed[2].param("scope"), Some("x"));
        assert_eq!(oauth_challenge(&parsed).unwrap().scheme, "DPoP");
    }

    #[test]
    fn escapes_token68_and_bare_schemes() {
        let parsed = parse_challenges(&[
            r#"Bearer realm="say \"hi\" \\ ok""#,
            "Negotiate abc==, Bearer",
        ]);
        assert_eq!(parsed[0].param("realm"), Some(r#"say "hi" \ ok"#));
        assert_eq!(parsed[1].token68.as_deref(), Some("abc=="));
        assert!(parsed[2].is("bearer") && parsed[2].params.is_empty());
    }

    #[test]
    fn garbage_keeps_what_came_before() {
        let parsed = parse_challenges(&[r#"Bearer scope="a", error="unterminated"#]);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].param("scope"), Some("a"));
        assert!(parse_challenges(&["=,=", "", "\"", "Bearer ,,,"]).len() <= 1);
    }
}
