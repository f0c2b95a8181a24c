//! The page and the element, both inside the binary (include_str!), so that `agent-fold serve`
//! needs no files beside it: `ui/serve/` holds the page's HTML, CSS and JavaScript, and the page
//! imports `ui/context-meter.js` by its package name (an import map says where), as any page
//! would.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// `ui/context-meter.js` as it is in the repository: the package's ES module.
pub(crate) const SCRIPT: &str = include_str!("../../../ui/context-meter.js");

/// `ui/serve/index.html`: the board and a session's detail, filled by `ui/serve/page.js`.
pub(crate) const PAGE: &str = include_str!("../../../ui/serve/index.html");

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// The page's other files, served at `/serve/<name>`: name, content type, text.
pub(crate) const FILES: &[(&str, &str, &str)] = &[
    ("page.js", JS, include_str!("../../../ui/serve/page.js")),
    ("board.js", JS, include_str!("../../../ui/serve/board.js")),
    ("detail.js", JS, include_str!("../../../ui/serve/detail.js")),
    ("spark.js", JS, include_str!("../../../ui/serve/spark.js")),
    ("chart.js", JS, include_str!("../../../ui/serve/chart.js")),
    ("page.css", CSS, include_str!("../../../ui/serve/page.css")),
];

fn text(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`.
pub(crate) async fn page() -> Response {
    text(HTML, PAGE)
}

/// `GET /context-meter.js`.
pub(crate) async fn script() -> Response {
    text(JS, SCRIPT)
}

/// `GET /serve/{file}`: one of [`FILES`], else 404.
pub(crate) async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, body)) => text(kind, body),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}
