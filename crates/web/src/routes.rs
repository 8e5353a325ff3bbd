//! The route table: every path the server answers, its method and who may call it. The
//! guard ([`crate::guard`]) reads the access rule from here, so a route cannot be added to
//! the router without saying who may reach it; docs/API.md lists the same table (a test
//! holds the two together).

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone whose Host is allowed: the page and its assets, which hold no secret.
    Public,
    /// A request that carries a pairing code in its body (the exchange for a device token).
    PairCode,
    /// A paired device only: `Authorization: Bearer <token>`.
    Device,
}

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// The HTTP method (`GET` also answers `HEAD`).
    pub method: &'static str,
    /// The path; `{id}` stands for one non-empty segment.
    pub pattern: &'static str,
    /// Who may call it.
    pub access: Access,
    /// What it does, in a few words (docs/API.md says the same).
    pub what: &'static str,
}

const fn route(
    method: &'static str,
    pattern: &'static str,
    access: Access,
    what: &'static str,
) -> RouteSpec {
    RouteSpec {
        method,
        pattern,
        access,
        what,
    }
}

/// Every route the server answers.
pub const ROUTES: &[RouteSpec] = &[
    route("GET", "/", Access::Public, "the page"),
    route("GET", "/app.js", Access::Public, "the page's script"),
    route("GET", "/app.css", Access::Public, "the page's style"),
    route(
        "GET",
        "/sw.js",
        Access::Public,
        "the service worker that shows a push",
    ),
    route(
        "GET",
        "/manifest.webmanifest",
        Access::Public,
        "the web app manifest (a phone's home screen)",
    ),
    route(
        "POST",
        "/api/pair",
        Access::PairCode,
        "exchanges a pairing code for a device token",
    ),
    route(
        "GET",
        "/api/inbox",
        Access::Device,
        "every waiting approval and question, oldest first",
    ),
    route("GET", "/api/sessions", Access::Device, "every session"),
    route(
        "POST",
        "/api/sessions",
        Access::Device,
        "starts a new session",
    ),
    route(
        "GET",
        "/api/sessions/{id}/transcript",
        Access::Device,
        "the session's transcript as server-sent events, resumable by Last-Event-ID",
    ),
    route(
        "POST",
        "/api/sessions/{id}/approve",
        Access::Device,
        "allows once, for the session, or denies a request",
    ),
    route(
        "POST",
        "/api/sessions/{id}/answer",
        Access::Device,
        "answers the question waiting",
    ),
    route(
        "POST",
        "/api/sessions/{id}/prompt",
        Access::Device,
        "sends a prompt",
    ),
    route(
        "POST",
        "/api/sessions/{id}/interrupt",
        Access::Device,
        "stops the running turn",
    ),
    route(
        "POST",
        "/api/sessions/{id}/stop",
        Access::Device,
        "ends the session",
    ),
    route(
        "GET",
        "/api/devices",
        Access::Device,
        "the paired devices (no token)",
    ),
    route(
        "GET",
        "/api/push/key",
        Access::Device,
        "the VAPID public key a push subscription is made with",
    ),
    route(
        "POST",
        "/api/push/subscription",
        Access::Device,
        "keeps the browser's push subscription for this device",
    ),
    route(
        "DELETE",
        "/api/push/subscription",
        Access::Device,
        "forgets one of this device's push subscriptions",
    ),
];

/// What a method and path found in [`ROUTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The route.
    Found(&'static RouteSpec),
    /// The path exists, not with this method.
    WrongMethod,
    /// No such path.
    NotFound,
}

/// Whether `path` fits `pattern` (`{id}` matching one non-empty segment).
pub fn matches(pattern: &str, path: &str) -> bool {
    let mut want = pattern.split('/');
    let mut have = path.split('/');
    loop {
        match (want.next(), have.next()) {
            (None, None) => return true,
            (Some(w), Some(h)) if w.starts_with('{') => {
                if h.is_empty() {
                    return false;
                }
            }
            (Some(w), Some(h)) if w == h => {}
            _ => return false,
        }
    }
}

/// The route `method` and `path` name (a `HEAD` is looked up as its `GET`).
pub fn lookup(method: &str, path: &str) -> Lookup {
    let method = if method == "HEAD" { "GET" } else { method };
    let mut path_known = false;
    for spec in ROUTES {
        if matches(spec.pattern, path) {
            if spec.method == method {
                return Lookup::Found(spec);
            }
            path_known = true;
        }
    }
    if path_known {
        Lookup::WrongMethod
    } else {
        Lookup::NotFound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let table: &[(&str, &str, Option<Access>, Lookup)] = &[
            ("GET", "/", Some(Access::Public), Lookup::NotFound),
            ("HEAD", "/app.js", Some(Access::Public), Lookup::NotFound),
            (
                "POST",
                "/api/pair",
                Some(Access::PairCode),
                Lookup::NotFound,
            ),
            ("GET", "/api/inbox", Some(Access::Device), Lookup::NotFound),
            (
                "POST",
                "/api/sessions/abc/approve",
                Some(Access::Device),
                Lookup::NotFound,
            ),
            (
                "GET",
                "/api/sessions/abc/transcript",
                Some(Access::Device),
                Lookup::NotFound,
            ),
            ("DELETE", "/api/inbox", None, Lookup::WrongMethod),
            (
                "GET",
                "/api/sessions/abc/approve",
                None,
                Lookup::WrongMethod,
            ),
            ("POST", "/api/sessions//approve", None, Lookup::NotFound),
            ("GET", "/api/sessions/a/b/approve", None, Lookup::NotFound),
            ("GET", "/etc/passwd", None, Lookup::NotFound),
            ("GET", "/api/inbox/", None, Lookup::NotFound),
        ];
        for (method, path, access, otherwise) in table {
            let got = lookup(method, path);
            match access {
                Some(access) => match got {
                    Lookup::Found(spec) => assert_eq!(spec.access, *access, "{method} {path}"),
                    other => panic!("{method} {path}: {other:?}"),
                },
                None => assert_eq!(got, *otherwise, "{method} {path}"),
            }
        }
    }

    /// Every route but the page and its assets needs a credential (pairing code or device).
    #[test]
    fn only_the_page_is_public() {
        for spec in ROUTES {
            let is_page = spec.method == "GET" && !spec.pattern.starts_with("/api/");
            assert_eq!(spec.access == Access::Public, is_page, "{spec:?}");
        }
    }
}
