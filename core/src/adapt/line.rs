//! One line of an agent's log, read as a JSON object by the one reader (contract §1): its top-level
//! members as raw slices, nested values looked up on demand, nothing built.

use std::borrow::Cow;

use crate::json::{self, Isa, Member};

/// The top-level members of a line that is a JSON object.
pub(crate) struct Line<'a> {
    members: Vec<Member<'a>>,
}

impl<'a> Line<'a> {
    /// `None` when the line is not a JSON object.
    pub(crate) fn read(bytes: &'a [u8]) -> Option<Line<'a>> {
        let mut members = Vec::new();
        json::object(bytes, Isa::best(), |m| members.push(m))?;
        Some(Line { members })
    }

    /// The raw value of member `name` (the last one, when repeated).
    pub(crate) fn get(&self, name: &str) -> Option<&'a str> {
        self.members
            .iter()
            .rev()
            .find(|m| m.is(name))
            .map(|m| m.value)
    }

    /// Member `name`'s string value.
    pub(crate) fn str(&self, name: &str) -> Option<Cow<'a, str>> {
        self.get(name).and_then(json::string)
    }

    /// Member `name`'s raw string token (quotes included), when it is a string.
    pub(crate) fn str_raw(&self, name: &str) -> Option<&'a str> {
        self.get(name).filter(|v| json::is_string(v))
    }

    /// Whether member `name` is `true`.
    pub(crate) fn is_true(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }

    /// Member `name`, when it is an object.
    pub(crate) fn object(&self, name: &str) -> Option<&'a str> {
        self.get(name).filter(|v| v.starts_with('{'))
    }

    /// The members, in order.
    pub(crate) fn members(&self) -> &[Member<'a>] {
        &self.members
    }
}

/// Member `name` of an object value, when it is one.
pub(crate) fn at<'a>(raw: Option<&'a str>, name: &str) -> Option<&'a str> {
    raw.and_then(|r| json::get(r, name))
}

/// Member `name` of an object value, as a string.
pub(crate) fn str_at<'a>(raw: Option<&'a str>, name: &str) -> Option<Cow<'a, str>> {
    at(raw, name).and_then(json::string)
}

/// Member `name` of an object value, as an integer ≥ 0.
pub(crate) fn uint_at(raw: Option<&str>, name: &str) -> Option<u64> {
    at(raw, name).and_then(json::uint)
}

/// Whether a raw value opens as an object (its first byte is `{`; the line reader has read it
/// whole, so it is one).
pub(crate) fn opens_object(raw: &str) -> bool {
    raw.starts_with('{')
}
