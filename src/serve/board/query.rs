//! `GET /api/sessions?sort=&order=&q=&limit=&offset=&all=`: the board's rows, ranked and
//! filtered on the server, for scripts and other dashboards; and one session's detail.
//!
//! The default rank is the board's: closest to its automatic compaction first
//! (`untilCompactTokens` ascending), then the fullest (`contextOccupancy` descending); an
//! unknown figure sorts after every known one, whichever the order.

use std::cmp::Ordering;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

use super::history::ShownPoint;
use super::row::Latest;

/// The most rows one answer carries.
pub(crate) const MAX_LIMIT: usize = 10_000;

/// What rows are sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sort {
    /// Closest to compacting, then fullest.
    Rank,
    Until,
    Occupancy,
    Used,
    Window,
    Session,
    Agent,
    Model,
    Active,
}

impl Sort {
    pub(crate) const NAMES: [(&'static str, Sort); 9] = [
        ("rank", Sort::Rank),
        ("until", Sort::Until),
        ("occupancy", Sort::Occupancy),
        ("used", Sort::Used),
        ("window", Sort::Window),
        ("session", Sort::Session),
        ("agent", Sort::Agent),
        ("model", Sort::Model),
        ("active", Sort::Active),
    ];

    /// The order a sort takes unless told: the nearest-to-trouble first.
    fn natural(self) -> Dir {
        match self {
            Sort::Rank | Sort::Until | Sort::Session | Sort::Agent | Sort::Model => Dir::Asc,
            Sort::Occupancy | Sort::Used | Sort::Window | Sort::Active => Dir::Desc,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Asc,
    Desc,
}

/// A query, read from the URL's parameters.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub sort: Sort,
    pub dir: Dir,
    /// Lowercase text a row's session, agent or model must contain.
    pub text: String,
    pub limit: usize,
    pub offset: usize,
    /// Idle sessions too, not only live ones.
    pub all: bool,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            sort: Sort::Rank,
            dir: Dir::Asc,
            text: String::new(),
            limit: 100,
            offset: 0,
            all: false,
        }
    }
}

/// A query string's pairs, decoded (`+`, `%XX`); one that does not decode is refused in words.
pub(crate) fn decode(raw: &[u8]) -> Result<Vec<(String, String)>, String> {
    serde_urlencoded::from_bytes(raw).map_err(|e| format!("the query does not read: {e}"))
}

impl Query {
    /// A query string (`sort=…&q=…`), decoded and read.
    pub(crate) fn from_query_string(raw: &[u8]) -> Result<Query, String> {
        let pairs = decode(raw)?;
        Query::parse(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Reads `sort`, `order`, `q`, `limit`, `offset`, `all`; a value that does not read is
    /// refused in words (the route answers 400 with them).
    pub(crate) fn parse<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Query, String> {
        let mut q = Query::default();
        let mut dir = None;
        for (k, v) in params {
            match k {
                "sort" => {
                    q.sort = Sort::NAMES
                        .iter()
                        .find(|(n, _)| *n == v)
                        .map(|(_, s)| *s)
                        .ok_or_else(|| {
                            let names: Vec<&str> = Sort::NAMES.iter().map(|(n, _)| *n).collect();
                            format!("sort={v:?}: sort by one of {}", names.join(", "))
                        })?
                }
                "order" => {
                    dir = Some(match v {
                        "asc" => Dir::Asc,
                        "desc" => Dir::Desc,
                        _ => return Err(format!("order={v:?}: asc or desc")),
                    })
                }
                "q" => q.text = v.to_lowercase(),
                "limit" => {
                    q.limit = v
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_LIMIT).contains(n))
                        .ok_or_else(|| {
                            format!("limit={v:?}: a whole number from 1 to {MAX_LIMIT}")
                        })?
                }
                "offset" => {
                    q.offset = v
                        .parse()
                        .map_err(|_| format!("offset={v:?}: a whole number ≥ 0"))?
                }
                "all" => {
                    q.all = match v {
                        "1" | "true" => true,
                        "0" | "false" => false,
                        _ => return Err(format!("all={v:?}: 1 or 0")),
                    }
                }
                other => {
                    return Err(format!(
                        "{other:?} is not a parameter (sort, order, q, limit, offset, all)"
                    ));
                }
            }
        }
        q.dir = dir.unwrap_or(q.sort.natural());
        Ok(q)
    }

    /// Whether a session's id, agent or model contains the text.
    pub(crate) fn matches(&self, session: &str, agent: Option<&str>, model: Option<&str>) -> bool {
        if self.text.is_empty() {
            return true;
        }
        let has = |s: &str| s.to_lowercase().contains(&self.text);
        has(session) || agent.is_some_and(has) || model.is_some_and(has)
    }

    /// How two rows compare under this query; ties fall to the session id.
    pub(crate) fn order(&self, a: &Key, b: &Key) -> Ordering {
        let dir = |o: Ordering| match self.dir {
            Dir::Asc => o,
            Dir::Desc => o.reverse(),
        };
        // Unknown after known, whatever the direction.
        fn known<T: PartialOrd>(
            a: Option<T>,
            b: Option<T>,
            dir: impl Fn(Ordering) -> Ordering,
        ) -> Ordering {
            match (a, b) {
                (Some(x), Some(y)) => dir(x.partial_cmp(&y).unwrap_or(Ordering::Equal)),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        }
        let primary = match self.sort {
            Sort::Rank => {
                let until = known(a.latest.until, b.latest.until, dir);
                until.then_with(|| {
                    known(a.latest.occupancy, b.latest.occupancy, |o| dir(o).reverse())
                })
            }
            Sort::Until => known(a.latest.until, b.latest.until, dir),
            Sort::Occupancy => known(a.latest.occupancy, b.latest.occupancy, dir),
            Sort::Used => known(a.latest.used(), b.latest.used(), dir),
            Sort::Window => known(a.latest.capacity, b.latest.capacity, dir),
            Sort::Session => dir(a.session.cmp(b.session)),
            Sort::Agent => known(a.agent, b.agent, dir),
            Sort::Model => known(a.model, b.model, dir),
            Sort::Active => dir(a.active.cmp(&b.active)),
        };
        primary.then_with(|| a.session.cmp(b.session))
    }
}

/// What a row sorts on.
pub(crate) struct Key<'a> {
    pub session: &'a str,
    pub agent: Option<&'a str>,
    pub model: Option<&'a str>,
    pub latest: &'a Latest,
    pub active: i64,
}

/// `GET /api/sessions`.
#[derive(Serialize)]
pub(crate) struct Answer {
    /// The board's version the rows are as of.
    pub v: u64,
    /// Sessions kept, live and idle.
    pub total: usize,
    /// Of those, live.
    pub live: usize,
    /// Sessions the query matched (before `offset` and `limit`).
    pub matched: usize,
    pub sessions: Vec<Arc<RawValue>>,
}

/// A session's history as the page draws it.
#[derive(Serialize)]
pub(crate) struct HistoryOut {
    pub points: Vec<ShownPoint>,
}

/// `GET /api/sessions/{id}`.
#[derive(Serialize)]
pub(crate) struct Detail {
    pub v: u64,
    pub row: Arc<RawValue>,
    pub history: HistoryOut,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(session: &'a str, latest: &'a Latest) -> Key<'a> {
        Key {
            session,
            agent: None,
            model: None,
            latest,
            active: 0,
        }
    }

    fn latest(until: Option<u64>, occupancy: Option<f64>) -> Latest {
        Latest {
            until,
            occupancy,
            ..Latest::default()
        }
    }

    fn ranked(q: &Query, rows: &[(&str, Latest)]) -> Vec<String> {
        let mut keys: Vec<Key> = rows.iter().map(|(s, l)| key(s, l)).collect();
        keys.sort_by(|a, b| q.order(a, b));
        keys.iter().map(|k| k.session.to_owned()).collect()
    }

    #[test]
    fn the_rank_is_closest_to_compacting_then_fullest_unknown_last() {
        let rows = [
            ("far", latest(Some(90_000), Some(0.2))),
            ("unknown", latest(None, Some(0.99))),
            ("near-full", latest(Some(5_000), Some(0.95))),
            ("near", latest(Some(5_000), Some(0.80))),
            ("nothing", latest(None, None)),
        ];
        let q = Query::default();
        assert_eq!(
            ranked(&q, &rows),
            ["near-full", "near", "far", "unknown", "nothing"]
        );
        let q = Query::parse([("sort", "occupancy")]).unwrap();
        assert_eq!(q.dir, Dir::Desc);
        assert_eq!(
            ranked(&q, &rows),
            ["unknown", "near-full", "near", "far", "nothing"]
        );
        let q = Query::parse([("sort", "until"), ("order", "desc")]).unwrap();
        assert_eq!(
            ranked(&q, &rows),
            ["far", "near", "near-full", "nothing", "unknown"]
        );
    }

    #[test]
    fn parameters_are_checked_in_words() {
        for (pair, says) in [
            ("sort=speed", "sort by one of"),
            ("order=up", "asc or desc"),
            ("limit=0", "from 1 to"),
            ("limit=lots", "from 1 to"),
            ("all=yes", "1 or 0"),
            ("page=2", "not a parameter"),
        ] {
            let e = Query::parse([pair.split_once('=').unwrap()]).unwrap_err();
            assert!(e.contains(says), "{pair}: {e}");
        }
        let q = Query::parse([("q", "OPUS"), ("limit", "5"), ("all", "1")]).unwrap();
        assert!(q.matches("s", None, Some("claude-opus-4-6")));
        assert!(!q.matches("s", Some("codex"), None));
        assert_eq!((q.limit, q.all), (5, true));
    }
}
