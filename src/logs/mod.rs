//! Agents' own logs as the tools read them: which files a path holds and whether it is
//! readable at all ([`files`]), a session's files merged by time ([`merge`]), what format a
//! log is — told in one place, [`detect`] — and reading it whole or as it comes, with the
//! adapters that turn its lines into frames ([`reader`]).

pub(crate) mod detect;
pub(crate) mod files;
pub(crate) mod merge;
pub(crate) mod reader;

pub(crate) use detect::{DETECT_LINES, Detector, Verdict};
pub(crate) use files::{
    database, file_id, is_tree, log_files, names_database, open_regular, tree_files,
};
pub(crate) use merge::merge;
pub(crate) use reader::{LogReader, adapt_all, adapt_chunk, read_records, read_records_in};
