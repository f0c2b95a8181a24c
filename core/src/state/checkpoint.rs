//! The one checkpoint codec: a document of per-session states, `stateVersion` 5, restoring 5,
//! 4, 3, 2 and 1. Each state type says how its members are written and read ([`Checkpointed`]);
//! the document, the session keys and the duplicate check live here once.
//!
//! Reading streams: the document is walked once to find its parts (borrowed, never copied),
//! then the sessions are read one by one into the state, so a restore holds the state it
//! builds and little else, whatever the checkpoint's size.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::record::MAX_KEY_LEN;

pub use super::error::CheckpointError;

/// The format this build writes.
pub const STATE_VERSION: u64 = 5;

/// Members of a JSON object being written: `"name":value`, comma-separated.
#[derive(Default)]
pub(crate) struct Members {
    pub out: String,
}

impl Members {
    fn name(&mut self, name: &str) {
        if !self.out.is_empty() {
            self.out.push(',');
        }
        self.out.push('"');
        self.out.push_str(name);
        self.out.push_str("\":");
    }

    pub(crate) fn raw(&mut self, name: &str, json: &str) {
        self.name(name);
        self.out.push_str(json);
    }

    pub(crate) fn uint(&mut self, name: &str, n: u64) {
        self.name(name);
        self.out.push_str(crate::json::uint_text(n, &mut [0; 20]));
    }

    pub(crate) fn opt_uint(&mut self, name: &str, n: Option<u64>) {
        match n {
            Some(n) => self.uint(name, n),
            None => self.raw(name, "null"),
        }
    }

    pub(crate) fn bool(&mut self, name: &str, b: bool) {
        self.raw(name, if b { "true" } else { "false" });
    }

    pub(crate) fn opt_str(&mut self, name: &str, s: Option<&str>) {
        match s {
            Some(s) => {
                self.name(name);
                let mut buf = Vec::with_capacity(s.len() + 2);
                crate::json::write_string(&mut buf, s.as_bytes());
                self.out.push_str(&String::from_utf8_lossy(&buf));
            }
            None => self.raw(name, "null"),
        }
    }

    /// A session key: `"session"` when it is UTF-8, else `"sessionBytes"`, an array of bytes.
    pub(crate) fn key(&mut self, key: &[u8]) {
        match std::str::from_utf8(key) {
            Ok(s) => self.opt_str("session", Some(s)),
            Err(_) => {
                let bytes: Vec<String> = key.iter().map(u8::to_string).collect();
                self.raw("sessionBytes", &format!("[{}]", bytes.join(",")));
            }
        }
    }

    /// The members as an object.
    pub(crate) fn object(self) -> String {
        format!("{{{}}}", self.out)
    }
}

/// A member of a session object being read: its name, and the map its value comes next from.
pub(crate) struct Member<'m, A> {
    pub name: &'m str,
    pub map: &'m mut A,
}

impl<'de, A: MapAccess<'de>> Member<'_, A> {
    /// Its value as `T`; refused in words that name the member and what it must be.
    pub(crate) fn read<T: Deserialize<'de> + field::Shape>(self) -> Result<T, A::Error> {
        field::read(self.map, self.name)
    }

    /// Its value as a list of at most `max` items (a bounded list of the state, which a
    /// checkpoint may not grow): refused in words that name the member, the bound and `what`
    /// the items are.
    pub(crate) fn read_bounded<T>(self, max: usize, what: &str) -> Result<Vec<T>, A::Error>
    where
        Vec<T>: Deserialize<'de> + field::Shape,
    {
        let name = self.name;
        let items: Vec<T> = self.read()?;
        if items.len() > max {
            return Err(serde::de::Error::custom(format!(
                "`{name}` holds at most {max} {what}"
            )));
        }
        Ok(items)
    }
}

/// A session state as a checkpoint carries it.
pub(crate) trait Checkpointed: Sized {
    /// What the members read so far hold.
    type Builder: Default;
    /// What the instance tells the codec (which view it serves).
    type Ctx: Copy;
    /// Writes the state's members (after its key).
    fn write(&self, w: &mut Members, ctx: Self::Ctx);
    /// Reads member `m` into `b`; `Ok(false)` when it is not one of this state's (its value
    /// is then left unread).
    fn read<'de, A: MapAccess<'de>>(
        b: &mut Self::Builder,
        m: Member<'_, A>,
    ) -> Result<bool, A::Error>;
    /// The state the members read make, for a session object of `version`.
    fn finish(b: Self::Builder, version: u64, ctx: Self::Ctx) -> Result<Self, CheckpointError>;
}

/// Reads a nested object member (`"adapter": {…}`) as state `T`.
pub(crate) fn nested<'de, A: MapAccess<'de>, T: Checkpointed>(
    map: &mut A,
    version: u64,
    ctx: T::Ctx,
) -> Result<T, A::Error> {
    struct Seed<T: Checkpointed>(u64, T::Ctx);
    impl<'de, T: Checkpointed> Visitor<'de> for Seed<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<T, M::Error> {
            let mut b = T::Builder::default();
            while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                if !T::read(
                    &mut b,
                    Member {
                        name: &name,
                        map: &mut map,
                    },
                )? {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            T::finish(b, self.0, self.1).map_err(|e| de::Error::custom(e.to_string()))
        }
    }
    impl<'de, T: Checkpointed> DeserializeSeed<'de> for Seed<T> {
        type Value = T;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            d.deserialize_map(self)
        }
    }
    map.next_value_seed(Seed::<T>(version, ctx))
}

/// Writes sessions, least recently used first, as a JSON array.
pub(crate) fn write_sessions<'a, T: Checkpointed + 'a>(
    out: &mut String,
    sessions: impl Iterator<Item = (&'a [u8], &'a T)>,
    ctx: T::Ctx,
) {
    out.push('[');
    for (i, (key, state)) in sessions.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut w = Members::default();
        w.key(key);
        state.write(&mut w, ctx);
        out.push_str(&w.object());
    }
    out.push(']');
}

/// The parts of a checkpoint document, borrowed from its text.
#[derive(Default)]
pub(crate) struct Document<'a> {
    pub version: u64,
    pub view: Option<String>,
    pub input: Option<String>,
    pub last: Option<&'a RawValue>,
    pub lines: u64,
    pub sessions: Option<&'a RawValue>,
    /// A version 3 document's separate adapter state.
    pub adapter: Option<&'a RawValue>,
}

/// A refusal met inside a serde visitor, carried out past serde's own error type.
#[derive(Default)]
struct Refused(RefCell<Option<CheckpointError>>);

impl Refused {
    fn raise<E: de::Error>(&self, e: CheckpointError) -> E {
        let msg = e.to_string();
        *self.0.borrow_mut() = Some(e);
        E::custom(msg)
    }

    /// The refusal, or the reader's own error.
    fn into_error(self, e: serde_json::Error) -> CheckpointError {
        self.0
            .into_inner()
            .unwrap_or_else(|| CheckpointError::Invalid(e.to_string()))
    }
}

/// `stateVersion` as read: 1 to 5, refused naming the JSON text otherwise (a string or float
/// that merely looks right is refused too).
fn version_of(raw: &RawValue) -> Result<u64, CheckpointError> {
    match crate::json::uint(raw.get()) {
        Some(n @ 1..=STATE_VERSION) => Ok(n),
        _ => Err(CheckpointError::Version {
            found: raw.get().to_owned(),
            latest: STATE_VERSION,
        }),
    }
}

impl<'a> Document<'a> {
    /// Reads a document's parts (one walk, nothing copied).
    pub(crate) fn read(text: &'a str) -> Result<Document<'a>, CheckpointError> {
        Document::read_with(text, None)
    }

    /// [`Document::read`], taking `default` as the version of a document that names none.
    pub(crate) fn read_with(
        text: &'a str,
        default: Option<u64>,
    ) -> Result<Document<'a>, CheckpointError> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = (Document<'de>, bool);
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a checkpoint object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut d = Document::default();
                let mut version = None;
                while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*name {
                        "stateVersion" => version = Some(map.next_value::<&'de RawValue>()?),
                        "view" => d.view = map.next_value()?,
                        "input" => d.input = map.next_value()?,
                        "last" => d.last = Some(map.next_value()?),
                        "lines" => d.lines = map.next_value()?,
                        "sessions" => d.sessions = Some(map.next_value()?),
                        "adapter" => d.adapter = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let known = match version {
                    Some(v) => {
                        d.version = version_of(v).map_err(|e| de::Error::custom(e.to_string()))?;
                        true
                    }
                    None => false,
                };
                Ok((d, known))
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let (doc, known) = de
            .deserialize_map(V)
            .and_then(|d| de.end().map(|()| d))
            .map_err(|e| CheckpointError::Invalid(format!("not a checkpoint document: {e}")))?;
        match (known, default) {
            (true, _) => Ok(doc),
            (false, Some(v)) => Ok(Document { version: v, ..doc }),
            (false, None) => Err(CheckpointError::MissingVersion),
        }
    }
}

/// Reads a JSON array of session objects, handing each `(key, state)` to `take` in order;
/// `version` is the document's (a session object may carry its own). A key listed twice, or
/// over the limit, is refused.
pub(crate) fn read_sessions<T: Checkpointed>(
    raw: &RawValue,
    version: u64,
    ctx: T::Ctx,
    mut take: impl FnMut(Vec<u8>, T) -> Result<(), CheckpointError>,
) -> Result<(), CheckpointError> {
    let refused = Refused::default();
    let mut seen = HashSet::new();
    let seed = SessionList::<T, _> {
        version,
        ctx,
        refused: &refused,
        seen: &mut seen,
        take: &mut take,
        t: std::marker::PhantomData,
    };
    let mut de = serde_json::Deserializer::from_str(raw.get());
    match de.deserialize_seq(seed) {
        Ok(()) => Ok(()),
        Err(e) => Err(refused.into_error(e)),
    }
}

struct SessionList<'r, T: Checkpointed, F> {
    version: u64,
    ctx: T::Ctx,
    refused: &'r Refused,
    seen: &'r mut HashSet<Vec<u8>>,
    take: &'r mut F,
    t: std::marker::PhantomData<T>,
}

impl<'de, T: Checkpointed, F: FnMut(Vec<u8>, T) -> Result<(), CheckpointError>> Visitor<'de>
    for SessionList<'_, T, F>
{
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`sessions`, an array of session objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let refused = self.refused;
        while let Some((key, state)) = seq.next_element_seed(SessionSeed::<T> {
            version: self.version,
            ctx: self.ctx,
            refused,
            t: std::marker::PhantomData,
        })? {
            if !self.seen.insert(key.clone()) {
                return Err(refused.raise(CheckpointError::Duplicate(key)));
            }
            (self.take)(key, state).map_err(|e| refused.raise(e))?;
        }
        Ok(())
    }
}

impl<'de, T: Checkpointed, F: FnMut(Vec<u8>, T) -> Result<(), CheckpointError>> DeserializeSeed<'de>
    for SessionList<'_, T, F>
{
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

struct SessionSeed<'r, T: Checkpointed> {
    version: u64,
    ctx: T::Ctx,
    refused: &'r Refused,
    t: std::marker::PhantomData<T>,
}

impl<'de, T: Checkpointed> Visitor<'de> for SessionSeed<'_, T> {
    type Value = (Vec<u8>, T);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a session object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key: Option<Vec<u8>> = None;
        let mut version = self.version;
        let mut b = T::Builder::default();
        while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*name {
                "session" => key = Some(map.next_value::<String>()?.into_bytes()),
                "sessionBytes" => key = Some(map.next_value::<Vec<u8>>()?),
                "stateVersion" => {
                    let raw: &RawValue = map.next_value()?;
                    version = version_of(raw).map_err(|e| self.refused.raise(e))?;
                }
                other => {
                    if !T::read(
                        &mut b,
                        Member {
                            name: other,
                            map: &mut map,
                        },
                    )? {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
        }
        let Some(key) = key else {
            return Err(self.refused.raise(CheckpointError::Invalid(
                "a session has neither a `session` string nor `sessionBytes`".into(),
            )));
        };
        if key.len() > MAX_KEY_LEN {
            return Err(self.refused.raise(CheckpointError::KeyTooLong(key.len())));
        }
        let state = T::finish(b, version, self.ctx).map_err(|e| self.refused.raise(e))?;
        Ok((key, state))
    }
}

impl<'de, T: Checkpointed> DeserializeSeed<'de> for SessionSeed<'_, T> {
    type Value = (Vec<u8>, T);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// A session key in its codec: `{"session": …}` or `{"sessionBytes": […]}`; a version 3
/// document's bare string is read too.
pub(crate) fn read_key(raw: &RawValue) -> Result<Option<Vec<u8>>, CheckpointError> {
    use serde_json::Value;
    let bad = || CheckpointError::Invalid("`last` must be a session key or null".into());
    let bytes = |v: &Value| -> Option<Vec<u8>> {
        v.as_array()?
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect()
    };
    let key = match serde_json::from_str::<Value>(raw.get()).map_err(|_| bad())? {
        Value::Null => None,
        Value::String(s) => Some(s.into_bytes()),
        Value::Object(o) => match (o.get("session"), o.get("sessionBytes")) {
            (Some(Value::String(s)), _) => Some(s.clone().into_bytes()),
            (_, Some(b)) => Some(bytes(b).ok_or_else(bad)?),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    match key {
        Some(k) if k.len() > MAX_KEY_LEN => Err(CheckpointError::KeyTooLong(k.len())),
        k => Ok(k),
    }
}

/// Writes a session key in its codec (`null` for none).
pub(crate) fn key_json(key: Option<&[u8]>) -> String {
    match key {
        Some(k) => {
            let mut w = Members::default();
            w.key(k);
            w.object()
        }
        None => "null".into(),
    }
}

/// Reads a member's value, refusing the wrong shape with the member's name.
pub(crate) mod field {
    use serde::Deserialize;
    use serde::de::{self, MapAccess};

    /// What a member of this type must be, said to whoever wrote the checkpoint.
    pub(crate) trait Shape {
        const WHAT: &'static str;
    }

    impl Shape for u64 {
        const WHAT: &'static str = "an integer ≥ 0";
    }
    impl Shape for Option<u64> {
        const WHAT: &'static str = "an integer ≥ 0 or null";
    }
    impl Shape for Option<i64> {
        const WHAT: &'static str = "an integer or null";
    }
    impl Shape for bool {
        const WHAT: &'static str = "true or false";
    }
    impl Shape for Option<String> {
        const WHAT: &'static str = "a string or null";
    }
    impl Shape for Option<(u64, u64)> {
        const WHAT: &'static str = "[integer ≥ 0, integer ≥ 0] or null";
    }
    impl Shape for Vec<u64> {
        const WHAT: &'static str = "an array of integers ≥ 0";
    }
    impl Shape for Vec<(u64, u64)> {
        const WHAT: &'static str = "an array of [integer ≥ 0, integer ≥ 0] pairs";
    }
    impl Shape for (Option<u64>, Option<u64>) {
        const WHAT: &'static str = "[integer ≥ 0 or null, integer ≥ 0 or null]";
    }
    impl Shape for (Option<u64>, Option<u64>, Option<u64>) {
        const WHAT: &'static str = "an array of three integers ≥ 0 or nulls";
    }
    impl Shape for Option<(Option<String>, Option<u64>, Option<u64>)> {
        const WHAT: &'static str =
            "[a string or null, integer ≥ 0 or null, integer ≥ 0 or null] or null";
    }
    impl Shape for Option<(Option<String>, Option<u64>)> {
        const WHAT: &'static str = "[a string or null, integer ≥ 0 or null] or null";
    }
    impl Shape for (bool, bool) {
        const WHAT: &'static str = "[true or false, true or false]";
    }
    impl Shape for (Option<u64>, Option<u64>, bool) {
        const WHAT: &'static str = "[integer ≥ 0 or null, integer ≥ 0 or null, true or false]";
    }

    /// `[1,null,3]`: integers that may be absent, as one member.
    pub(crate) fn nullable(values: &[Option<u64>]) -> String {
        let items: Vec<String> = values
            .iter()
            .map(|v| v.map_or_else(|| "null".to_owned(), |n| n.to_string()))
            .collect();
        format!("[{}]", items.join(","))
    }

    pub(crate) fn read<'de, A: MapAccess<'de>, T: Deserialize<'de> + Shape>(
        map: &mut A,
        name: &str,
    ) -> Result<T, A::Error> {
        map.next_value::<T>()
            .map_err(|_: A::Error| de::Error::custom(format!("`{name}` must be {}", T::WHAT)))
    }
}
