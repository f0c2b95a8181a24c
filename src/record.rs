//! The host's record: key and value bytes, as Fluvio carries them, and the conversions between
//! it and the core's view of an invocation.

use agent_fold_core::{Emit, RecordIn};
use fluvio_smartmodule::Record;

/// One record as the host sees it: key and value bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
}

impl Rec {
    pub fn new(key: Option<&[u8]>, value: &[u8]) -> Rec {
        Rec {
            key: key.map(<[u8]>::to_vec),
            value: value.to_vec(),
        }
    }

    /// Its key's and value's bytes: what an invocation's size is counted in.
    pub fn bytes(&self) -> usize {
        self.key.as_ref().map_or(0, Vec::len) + self.value.len()
    }

    /// As a Fluvio record.
    pub fn to_fluvio(&self) -> Record {
        match &self.key {
            Some(k) => Record::new_key_value(k.clone(), self.value.clone()),
            None => Record::new(self.value.clone()),
        }
    }

    /// From a Fluvio record.
    pub fn from_fluvio(r: &Record) -> Rec {
        Rec {
            key: r.key().map(|k| k.as_ref().to_vec()),
            value: r.value().as_ref().to_vec(),
        }
    }
}

/// An invocation's records as the core reads them, the first at offset `base`.
pub fn inputs(records: &[Rec], base: i64) -> Vec<RecordIn<'_>> {
    records
        .iter()
        .enumerate()
        .map(|(i, r)| RecordIn::new(r.key.as_deref(), &r.value).at(base + i as i64))
        .collect()
}

/// What an invocation emitted, as records, keys included.
pub fn emitted(records: &[Rec], emits: Vec<Emit>) -> Vec<Rec> {
    emits
        .into_iter()
        .map(|e| match e {
            Emit::Pass(i) => records[i].clone(),
            Emit::Replace(i, value) => Rec {
                key: records[i].key.clone(),
                value,
            },
            Emit::New { key, value, .. } => Rec {
                key: Some(key),
                value,
            },
        })
        .collect()
}
