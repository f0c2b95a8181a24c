//! Logs through `tracing`, on stderr, filtered by `RUST_LOG` (default: this crate's info and
//! others' warnings). Human lines read as before (`relay: …`, `agent-fold serve: …`, fields
//! after the message); `--log-format json` writes one JSON object a line for machines.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people: `relay: message key=value`
    #[default]
    Human,
    /// One JSON object a line: timestamp, level, target, message, fields
    Json,
}

/// The filter when `RUST_LOG` is not set.
const DEFAULT_FILTER: &str = "agent_fold=info,warn";

/// Who speaks a line: the subcommand its module belongs to.
fn speaker(target: &str) -> &str {
    if target.starts_with("agent_fold::relay") {
        "relay"
    } else if target.starts_with("agent_fold::serve") || target.starts_with("agent_fold::service") {
        "agent-fold serve"
    } else if target.starts_with("agent_fold") {
        "agent-fold"
    } else {
        target
    }
}

struct Human;

impl<S, N> FormatEvent<S, N> for Human
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        write!(writer, "{}: ", speaker(meta.target()))?;
        if *meta.level() <= tracing::Level::WARN && !meta.target().starts_with("agent_fold") {
            write!(writer, "{}: ", meta.level())?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// Installs the subscriber once for the process (a second call does nothing).
pub(crate) fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours and italics only for a person at a terminal: a file, a pipe, journald or a
    // container's log gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.event_format(Human).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_spoken_by_their_subcommand() {
        assert_eq!(speaker("agent_fold::relay::pump"), "relay");
        assert_eq!(speaker("agent_fold::serve::source"), "agent-fold serve");
        assert_eq!(speaker("agent_fold::module"), "agent-fold");
        assert_eq!(speaker("fluvio::consumer"), "fluvio::consumer");
    }
}
