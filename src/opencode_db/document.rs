//! A session's documents as `opencode export` prints them ([`super`]): each message's and
//! part's `data` with its ids appended after it, documents within a bound.

use super::{Db, DbError, Message};

/// A JSON string literal of `s`.
pub(super) fn quoted(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `data`, a JSON object's text, with `ids` appended as members after its own (as OpenCode's
/// export appends them); `None` when `data` is not a JSON object.
pub(super) fn with_ids(data: &[u8], ids: &[(&str, &str)]) -> Option<Vec<u8>> {
    let data = data.trim_ascii();
    if !agent_fold_core::is_object(data) {
        return None;
    }
    let body = data[1..data.len() - 1].trim_ascii();
    let mut out = Vec::with_capacity(data.len() + 96);
    out.push(b'{');
    out.extend_from_slice(body);
    for (i, (name, value)) in ids.iter().enumerate() {
        if i > 0 || !body.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(quoted(name).as_bytes());
        out.push(b':');
        out.extend_from_slice(quoted(value).as_bytes());
    }
    out.push(b'}');
    Some(out)
}

/// One session's documents being written: messages appended while a document stays within
/// its bound, then a new one, opening with the last message written.
pub(super) struct Documents {
    session: String,
    info: Vec<u8>,
    max: usize,
    /// The last message written (a document's anchor), and the document being written.
    pub(super) last: Option<String>,
    current: Vec<u8>,
    /// Messages in `current`, the anchor not counted.
    messages: usize,
    done: Vec<Vec<u8>>,
    said: Vec<String>,
}

impl Documents {
    pub(super) fn new(session: &str, info: Vec<u8>, last: Option<String>, max: usize) -> Documents {
        let mut d = Documents {
            session: session.to_owned(),
            info,
            max,
            last,
            current: Vec::new(),
            messages: 0,
            done: Vec::new(),
            said: Vec::new(),
        };
        d.open();
        d
    }

    /// Opens a document: the session, and the anchor when a message was written before.
    fn open(&mut self) {
        self.current.clear();
        self.current.extend_from_slice(b"{\"info\":");
        self.current.extend_from_slice(&self.info);
        self.current.extend_from_slice(b",\"messages\":[");
        if let Some(last) = &self.last {
            self.current.extend_from_slice(b"{\"info\":{\"id\":");
            self.current.extend_from_slice(quoted(last).as_bytes());
            self.current.extend_from_slice(b"},\"parts\":[]}");
        }
        self.messages = 0;
    }

    /// Closes the document being written, when it holds a message.
    fn close(&mut self) {
        if self.messages > 0 {
            let mut doc = std::mem::take(&mut self.current);
            doc.extend_from_slice(b"]}");
            self.done.push(doc);
        }
        self.open();
    }

    /// Bytes written so far, the open document's included.
    pub(super) fn bytes(&self) -> usize {
        self.done.iter().map(Vec::len).sum::<usize>() + self.current.len()
    }

    /// Appends message `id`; its parts over the bound are left out and said.
    pub(super) fn push(&mut self, db: &Db, id: &str, m: &Message) -> Result<(), DbError> {
        // Room for the document's opening, its anchor and its end.
        let room = self
            .max
            .saturating_sub(self.info.len() + 2 * id.len() + 96)
            .max(1);
        let mut left_out = 0;
        let Some(json) = db.message_json(id, m, room, &mut left_out)? else {
            self.said.push(format!(
                "{}: message {id} of session {} is not a JSON object: left out",
                db.path.display(),
                self.session
            ));
            return Ok(());
        };
        if left_out > 0 {
            self.said.push(format!(
                "{}: message {id} of session {}: {left_out} part(s) that are not JSON objects \
                 or over the {} bytes one record may hold were left out",
                db.path.display(),
                self.session,
                self.max
            ));
        }
        if self.messages > 0 && self.current.len() + json.len() + 3 > self.max {
            self.close();
        }
        if self.messages > 0 || self.last.is_some() {
            self.current.push(b',');
        }
        self.current.extend_from_slice(&json);
        self.messages += 1;
        self.last = Some(id.to_owned());
        Ok(())
    }

    /// The documents, and what was said.
    pub(super) fn finish(mut self) -> (Vec<Vec<u8>>, Vec<String>) {
        self.close();
        (self.done, self.said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_appended_as_the_export_appends_them() {
        assert_eq!(
            with_ids(
                br#" {"type":"text","text":"hi"} "#,
                &[("id", "p1"), ("sessionID", "s")]
            )
            .unwrap(),
            br#"{"type":"text","text":"hi","id":"p1","sessionID":"s"}"#
        );
        assert_eq!(
            with_ids(b"{ }", &[("id", "p\"1")]).unwrap(),
            br#"{"id":"p\"1"}"#
        );
        assert_eq!(with_ids(b"[1]", &[("id", "x")]), None);
        assert_eq!(with_ids(b"{\"a\":", &[("id", "x")]), None);
    }
}
