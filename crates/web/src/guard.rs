//! The checks every request passes before any handler runs, as one pure decision over what
//! the request says ([`Facts`]) — no I/O, no clock:
//!
//! 1. **Host** must be on the allow-list ([`allowed_hosts`]): a page served under a name
//!    rebound to 127.0.0.1 (DNS rebinding) sends its own name as Host, and Origin equals
//!    Host for such a page, so the Host list is the only check that stops it. Refused with
//!    421 on every route, the page and its assets included.
//! 2. The route must exist (404) with that method (405).
//! 3. Every method but GET and HEAD changes something, so it must come from an allowed
//!    **Origin** — a request without one is refused (a check that passes when Origin is
//!    absent is the hole vibe-kanban #2918 had) — and carry a JSON body (a cross-site form or
//!    `no-cors` fetch cannot send `application/json`). 403, 415.
//! 4. A route for a device needs a valid **bearer token** (401), GET included: the inbox and
//!    the transcripts are secrets too. The page itself is public and holds none.

use crate::routes::{lookup, Access, Lookup};

/// What the guard knows of a request.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The method, upper case.
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The `Host` header, when present and text.
    pub host: Option<&'a str>,
    /// The `Origin` header, when present and text.
    pub origin: Option<&'a str>,
    /// The `Content-Type` header, when present and text.
    pub content_type: Option<&'a str>,
    /// What the `Authorization` header proved.
    pub credential: Credential,
}

/// What the `Authorization` header proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A bearer token no paired device holds (or a revoked one's).
    Invalid,
    /// A paired device's token.
    Device,
}

/// Why a request is refused, with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 421: the Host is not one this server answers to (rebinding).
    Host,
    /// 404: no such route.
    NotFound,
    /// 405: the route exists with another method.
    Method,
    /// 403: a state-changing request from no Origin or a foreign one.
    Origin,
    /// 415: a state-changing request without a JSON body.
    ContentType,
    /// 401: a device route without a valid bearer token.
    Unauthorized,
}

impl Refusal {
    /// The HTTP status code.
    pub fn status(self) -> u16 {
        match self {
            Refusal::Host => 421,
            Refusal::NotFound => 404,
            Refusal::Method => 405,
            Refusal::Origin => 403,
            Refusal::ContentType => 415,
            Refusal::Unauthorized => 401,
        }
    }

    /// What the response body says.
    pub fn text(self) -> &'static str {
        match self {
            Refusal::Host => "this server does not answer to that Host",
            Refusal::NotFound => "no such route",
            Refusal::Method => "that route does not take this method",
            Refusal::Origin => "a request that changes something must come from this page's origin",
            Refusal::ContentType => "a request that changes something must send application/json",
            Refusal::Unauthorized => "pair this device first (no valid bearer token)",
        }
    }
}

/// The hosts a server on loopback `port` answers to: the loopback names with the port, then
/// `extra` (a `tailscale serve` name, a proxy's), lower-cased.
pub fn allowed_hosts(port: u16, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = ["127.0.0.1", "localhost", "[::1]"]
        .iter()
        .map(|name| format!("{name}:{port}"))
        .collect();
    for host in extra {
        let host = host.to_ascii_lowercase();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// Whether `host` (a Host header) is on the list; compared without case, exactly otherwise
/// (no suffix or prefix match: `127.0.0.1:7455.evil.test` is another name).
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|name| name.eq_ignore_ascii_case(host))
}

/// Whether `origin` (an Origin header) is `http://` or `https://` and an allowed host.
/// `null` (an opaque origin: a sandboxed frame, a file) is never allowed.
pub fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    !rest.contains('/') && host_allowed(rest, allowed)
}

/// Whether a `Content-Type` is JSON (`application/json`, parameters allowed).
pub fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// The decision: `Ok(access)` lets the request through to its handler, which gets the
/// route's access rule; `Err` is the refusal to answer with.
pub fn check(facts: &Facts<'_>, allowed: &[String]) -> Result<Access, Refusal> {
    if !facts.host.is_some_and(|host| host_allowed(host, allowed)) {
        return Err(Refusal::Host);
    }
    let spec = match lookup(facts.method, facts.path) {
        Lookup::Found(spec) => spec,
        Lookup::WrongMethod => return Err(Refusal::Method),
        Lookup::NotFound => return Err(Refusal::NotFound),
    };
    let reads_only = matches!(facts.method, "GET" | "HEAD");
    if !reads_only {
        if !facts
            .origin
            .is_some_and(|origin| origin_allowed(origin, allowed))
        {
            return Err(Refusal::Origin);
        }
        if !facts.content_type.is_some_and(is_json) {
            return Err(Refusal::ContentType);
        }
    }
    if spec.access == Access::Device && facts.credential != Credential::Device {
        return Err(Refusal::Unauthorized);
    }
    Ok(spec.access)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<String> {
        allowed_hosts(7455, &["Phone.Tail1234.ts.net".to_owned()])
    }

    #[test]
    fn hosts() {
        let table = [
            ("127.0.0.1:7455", true),
            ("localhost:7455", true),
            ("LOCALHOST:7455", true),
            ("[::1]:7455", true),
            ("phone.tail1234.ts.net", true),
            ("127.0.0.1", false),
            ("127.0.0.1:7456", false),
            ("evil.test:7455", false),
            ("127.0.0.1:7455.evil.test", false),
            ("localhost.:7455", false),
            ("", false),
        ];
        for (host, want) in table {
            assert_eq!(host_allowed(host, &allowed()), want, "{host}");
        }
    }

    #[test]
    fn origins() {
        let table = [
            ("http://127.0.0.1:7455", true),
            ("http://localhost:7455", true),
            ("https://phone.tail1234.ts.net", true),
            ("null", false),
            ("http://127.0.0.1:8000", false),
            ("http://evil.test:7455", false),
            ("http://127.0.0.1:7455/", false),
            ("ftp://127.0.0.1:7455", false),
            ("127.0.0.1:7455", false),
        ];
        for (origin, want) in table {
            assert_eq!(origin_allowed(origin, &allowed()), want, "{origin}");
        }
    }

    #[test]
    fn decisions() {
        use Credential::{Device, Invalid, Missing};
        let good_host = Some("127.0.0.1:7455");
        let good_origin = Some("http://127.0.0.1:7455");
        let json = Some("application/json; charset=utf-8");
        type Row<'a> = (
            &'a str,
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Credential,
            Result<Access, Refusal>,
        );
        let table: &[Row<'_>] = &[
            (
                "GET",
                "/",
                good_host,
                None,
                None,
                Missing,
                Ok(Access::Public),
            ),
            (
                "GET",
                "/",
                Some("evil.test:7455"),
                None,
                None,
                Device,
                Err(Refusal::Host),
            ),
            ("GET", "/", None, None, None, Device, Err(Refusal::Host)),
            (
                "GET",
                "/api/inbox",
                good_host,
                None,
                None,
                Missing,
                Err(Refusal::Unauthorized),
            ),
            (
                "GET",
                "/api/inbox",
                good_host,
                None,
                None,
                Invalid,
                Err(Refusal::Unauthorized),
            ),
            (
                "GET",
                "/api/inbox",
                good_host,
                None,
                None,
                Device,
                Ok(Access::Device),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                None,
                json,
                Device,
                Err(Refusal::Origin),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                Some("http://127.0.0.1:9"),
                json,
                Device,
                Err(Refusal::Origin),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                good_origin,
                Some("text/plain"),
                Device,
                Err(Refusal::ContentType),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                good_origin,
                None,
                Device,
                Err(Refusal::ContentType),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                good_origin,
                json,
                Missing,
                Err(Refusal::Unauthorized),
            ),
            (
                "POST",
                "/api/sessions/a/stop",
                good_host,
                good_origin,
                json,
                Device,
                Ok(Access::Device),
            ),
            (
                "POST",
                "/api/pair",
                good_host,
                good_origin,
                json,
                Missing,
                Ok(Access::PairCode),
            ),
            (
                "POST",
                "/api/pair",
                good_host,
                None,
                json,
                Missing,
                Err(Refusal::Origin),
            ),
            (
                "DELETE",
                "/api/sessions",
                good_host,
                good_origin,
                json,
                Device,
                Err(Refusal::Method),
            ),
            (
                "PUT",
                "/nope",
                good_host,
                good_origin,
                json,
                Device,
                Err(Refusal::NotFound),
            ),
        ];
        for (method, path, host, origin, content_type, credential, want) in table {
            let facts = Facts {
                method,
                path,
                host: *host,
                origin: *origin,
                content_type: *content_type,
                credential: *credential,
            };
            assert_eq!(check(&facts, &allowed()), *want, "{facts:?}");
        }
    }
}
