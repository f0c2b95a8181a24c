//! Which `Host` (and `Origin`) a request may name: a DNS-rebinding page reaches a loopback
//! server under a name of the attacker's, so a name is served only when it is `localhost` or
//! given with `--allow-host` (for a proxy); an IP literal cannot be rebound and is served at the
//! bound port. An `Origin`, when sent, must name an allowed host too.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The hosts a server answers to.
#[derive(Debug, Default)]
pub(crate) struct Hosts {
    /// The bound port: a Host without `--allow-host` must name it.
    pub port: u16,
    /// `--allow-host` names (lowercase), served at any port.
    pub allowed: Vec<String>,
    /// Requests refused for their Host.
    pub refused_host: AtomicU64,
    /// Requests refused for their Origin.
    pub refused_origin: AtomicU64,
}

/// A `host[:port]` read by the `http` crate's own authority parser (brackets kept on an IPv6
/// literal); `None` when it is no authority, or carries user information, which no Host or
/// Origin a browser sends does.
fn split(authority: &str) -> Option<(String, Option<u16>)> {
    if authority.contains('@') {
        return None;
    }
    let a: axum::http::uri::Authority = authority.parse().ok()?;
    let has_port = a
        .as_str()
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'));
    let port = match has_port {
        true => Some(a.port_u16()?),
        false => None,
    };
    (!a.host().is_empty()).then(|| (a.host().to_owned(), port))
}

fn is_ip_literal(host: &str) -> bool {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => host.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

impl Hosts {
    pub(crate) fn new(port: u16, allowed: &[String]) -> Hosts {
        Hosts {
            port,
            allowed: allowed.iter().map(|h| h.to_ascii_lowercase()).collect(),
            ..Hosts::default()
        }
    }

    /// Whether `authority` (`host[:port]`, `default_port` when none) names this server.
    pub(crate) fn allows(&self, authority: &str, default_port: u16) -> bool {
        let Some((host, port)) = split(authority) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        if self.allowed.contains(&host) {
            return true;
        }
        port.unwrap_or(default_port) == self.port && (host == "localhost" || is_ip_literal(&host))
    }

    /// Refused when the request names another host, in its Host, its URI or its Origin.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refused> {
        // Exactly one Host, as RFC 9112 §3.2 asks of a request (a server must refuse one with
        // several, or none): a proxy and this server must not each read a different one.
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = hosts.next();
        if hosts.next().is_some() {
            self.refused_host.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::HostTwice);
        }
        let named = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| Some(host?.to_str().unwrap_or("(not text)").to_owned()));
        match named {
            Some(h) if self.allows(&h, 80) => {}
            Some(h) => {
                self.refused_host.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::Host {
                    host: h,
                    port: self.port,
                });
            }
            None => {
                self.refused_host.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::NoHost);
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = origin.to_str().unwrap_or("(not text)");
            let ok = match text.split_once("://") {
                Some(("http", a)) => self.allows(a, 80),
                Some(("https", a)) => self.allows(a, 443),
                _ => false,
            };
            if !ok {
                self.refused_origin.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::Origin(text.to_owned()));
            }
        }
        Ok(())
    }
}

/// A request that names another server, refused with 403 before any route runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("a request with more than one Host header")]
    HostTwice,
    #[error("a request without a Host header")]
    NoHost,
    #[error(
        "Host {host:?} is not this server's: it answers to 127.0.0.1:{port}, localhost:{port} \
         and [::1]:{port} (behind a proxy, start it with --allow-host NAME)"
    )]
    Host { host: String, port: u16 },
    #[error("Origin {0:?} is not this server's: a page of another site may not read it")]
    Origin(String),
}

/// The middleware: a request naming another host gets 403 and why, before any route runs.
pub(crate) async fn guard(State(hosts): State<Arc<Hosts>>, req: Request, next: Next) -> Response {
    match hosts.check(req.headers(), req.uri()) {
        Ok(()) => next.run(req).await,
        Err(why) => (StatusCode::FORBIDDEN, format!("{why}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_names_and_ip_literals_at_the_port_and_allowed_names_pass() {
        let hosts = Hosts::new(8080, &["Meter.Example".to_owned()]);
        let uri: Uri = "/state".parse().unwrap();
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
            "10.1.2.3:8080",
            "meter.example",
            "meter.example:443",
        ] {
            let h = headers(&[("host", ok)]);
            assert_eq!(hosts.check(&h, &uri), Ok(()), "{ok}");
        }
        for bad in [
            "attacker.test:8080",
            "127.0.0.1:8081",
            "localhost",
            "[::1]",
            "127.0.0.1.attacker.test:8080",
            ":8080",
            "localhost:notaport",
            "evil@localhost:8080",
            "localhost:",
        ] {
            let h = headers(&[("host", bad)]);
            assert!(hosts.check(&h, &uri).is_err(), "{bad}");
        }
        assert!(hosts.check(&HeaderMap::new(), &uri).is_err(), "no Host");
        assert!(
            hosts.check(&headers(&[("host", "")]), &uri).is_err(),
            "an empty Host"
        );
        let mut two = headers(&[("host", "127.0.0.1:8080")]);
        two.append(header::HOST, "127.0.0.1:8080".parse().unwrap());
        let err = hosts.check(&two, &uri).unwrap_err();
        assert!(err.to_string().contains("more than one Host"), "{err}");
        let absolute: Uri = "http://evil.example/state".parse().unwrap();
        let h = headers(&[("host", "127.0.0.1:8080")]);
        assert!(hosts.check(&h, &absolute).is_err(), "an absolute-form URI");
        assert_eq!(hosts.refused_host.load(Ordering::Relaxed), 13);
    }

    #[test]
    fn an_origin_must_name_an_allowed_host() {
        let hosts = Hosts::new(8080, &[]);
        let uri: Uri = "/events".parse().unwrap();
        let with = |o: &'static str| headers(&[("host", "127.0.0.1:8080"), ("origin", o)]);
        assert_eq!(hosts.check(&with("http://127.0.0.1:8080"), &uri), Ok(()));
        assert_eq!(hosts.check(&with("http://localhost:8080"), &uri), Ok(()));
        for bad in [
            "http://attacker.test",
            "http://attacker.test:8080",
            "null",
            "file://",
        ] {
            let err = hosts.check(&with(bad), &uri).unwrap_err();
            assert!(err.to_string().contains("Origin"), "{bad}: {err}");
        }
        assert_eq!(hosts.refused_origin.load(Ordering::Relaxed), 4);
    }
}
