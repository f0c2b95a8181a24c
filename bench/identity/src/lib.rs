//! Bench fixture: the identity `array_map` SmartModule, the floor agent-fold's bench measures
//! against. It does exactly what `#[smartmodule(array_map)]` generates around a user function
//! that returns its record unchanged — decode the input, call the function per record, build
//! the output records, encode them — with the export hand-written (as `smartmodule/src/abi.rs`
//! does) so that `copy_records` is imported from `env` and the module builds with the very
//! same flags as the real one.

use fluvio_smartmodule::Record;
use fluvio_smartmodule::dataplane::record::RecordData;

/// The user function: one record in, the same record out.
pub fn identity(record: &Record) -> Vec<(Option<RecordData>, RecordData)> {
    vec![(record.key.clone(), record.value.clone())]
}

#[cfg(target_arch = "wasm32")]
mod abi {
    use std::io::Cursor;

    use fluvio_smartmodule::Record;
    use fluvio_smartmodule::dataplane::core::{Decoder, Encoder};
    use fluvio_smartmodule::dataplane::record::RecordKey;
    use fluvio_smartmodule::dataplane::smartmodule::{
        SmartModuleInput, SmartModuleOutput, SmartModuleTransformErrorStatus,
    };

    #[link(wasm_import_module = "env")]
    unsafe extern "C" {
        fn copy_records(ptr: i32, len: i32);
    }

    /// The derive's `array_map` entry point, line for line, around [`super::identity`].
    ///
    /// # Safety
    /// `ptr`/`len` are what the engine got from this module's `alloc(len)` and filled.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn array_map(ptr: *mut u8, len: usize, version: i16) -> i32 {
        let input_data = unsafe { Vec::from_raw_parts(ptr, len, len) };
        let mut input = SmartModuleInput::default();
        if Decoder::decode(&mut input, &mut Cursor::new(input_data), version).is_err() {
            return SmartModuleTransformErrorStatus::DecodingBaseInput as i32;
        }
        #[allow(deprecated)]
        let records: Vec<Record> = match input.clone().try_into_records(version) {
            Ok(records) => records,
            Err(_) => return SmartModuleTransformErrorStatus::DecodingBaseInput as i32,
        };
        let mut output = SmartModuleOutput {
            successes: Vec::with_capacity(records.len()),
            error: None,
        };
        for record in records {
            for (key, value) in super::identity(&record) {
                output
                    .successes
                    .push(Record::new_key_value(RecordKey::from_option(key), value));
            }
        }
        let mut out = Vec::new();
        if Encoder::encode(&output, &mut out, version).is_err() {
            return SmartModuleTransformErrorStatus::EncodingOutput as i32;
        }
        let (ptr, len) = (out.as_mut_ptr(), out.len());
        std::mem::forget(out);
        // SAFETY: the engine reads `len` bytes at `ptr`, which stay allocated (forgotten).
        unsafe { copy_records(ptr as i32, len as i32) };
        output.successes.len() as i32
    }
}
