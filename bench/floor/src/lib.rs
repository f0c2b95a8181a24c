//! Bench fixture: the floor module, the least an `array_map` in Fluvio's engine can cost. A
//! `SmartModuleInput`'s `raw_bytes` is already a `Vec<Record>` as Fluvio encodes it, which is
//! what a `SmartModuleOutput` starts with: the module hands those bytes back, with one copy and
//! a byte for "no error", decoding nothing. What the engine spends around it (encoding the
//! input, copying it in and out, decoding the output) is what every module pays.

/// The input's `raw_bytes`: after the 8-byte base offset, an `i32` length and the bytes. `None`
/// when the input is shorter than it says.
pub fn raw_bytes(input: &[u8]) -> Option<&[u8]> {
    let len = i32::from_be_bytes(input.get(8..12)?.try_into().ok()?);
    input.get(12..12 + usize::try_from(len).ok()?)
}

/// The output for `raw`: the records as they came, then `error: None`.
pub fn output_into(out: &mut Vec<u8>, raw: &[u8]) {
    out.clear();
    out.reserve(raw.len() + 1);
    out.extend_from_slice(raw);
    out.push(0);
}

#[cfg(target_arch = "wasm32")]
mod abi {
    use std::sync::Mutex;

    use fluvio_smartmodule::dataplane::smartmodule::SmartModuleTransformErrorStatus;

    #[link(wasm_import_module = "env")]
    unsafe extern "C" {
        fn copy_records(ptr: i32, len: i32);
    }

    /// The output, kept (and its buffer reused) until the next call: the engine copies it out
    /// after the call returns.
    static OUT: Mutex<Vec<u8>> = Mutex::new(Vec::new());

    /// # Safety
    /// `ptr`/`len` are what the engine got from this module's `alloc(len)` and filled.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn array_map(ptr: *mut u8, len: usize, _version: i16) -> i32 {
        // SAFETY: `alloc(len)` made a `Vec` of capacity `len` at `ptr`.
        let input = unsafe { Vec::from_raw_parts(ptr, len, len) };
        let Some(raw) = super::raw_bytes(&input) else {
            return SmartModuleTransformErrorStatus::DecodingBaseInput as i32;
        };
        let count = raw
            .get(..4)
            .map_or(0, |c| i32::from_be_bytes(c.try_into().unwrap()));
        let mut out = OUT.lock().unwrap_or_else(|p| p.into_inner());
        super::output_into(&mut out, raw);
        // SAFETY: the engine reads `len` bytes at `ptr` after this call returns; `OUT` keeps
        // them until the next call.
        unsafe { copy_records(out.as_ptr() as i32, out.len() as i32) };
        count.max(0)
    }
}

#[cfg(test)]
mod tests {
    use fluvio_smartmodule::Record;
    use fluvio_smartmodule::dataplane::core::{Decoder, Encoder};
    use fluvio_smartmodule::dataplane::smartmodule::{SmartModuleInput, SmartModuleOutput};

    #[test]
    fn the_output_is_the_input_records_as_fluvio_decodes_them() {
        let records = vec![Record::new("a"), Record::new_key_value("k", "{}")];
        let mut input = SmartModuleInput::try_from_records(records, 22).unwrap();
        input.set_base_offset(7);
        let mut bytes = Vec::new();
        input.encode(&mut bytes, 22).unwrap();
        let mut out = Vec::new();
        super::output_into(&mut out, super::raw_bytes(&bytes).unwrap());
        let output = SmartModuleOutput::decode_from(&mut std::io::Cursor::new(out), 22).unwrap();
        let values: Vec<&[u8]> = output.successes.iter().map(|r| r.value.as_ref()).collect();
        assert_eq!(values, [&b"a"[..], b"{}"]);
        assert!(output.error.is_none());
        assert_eq!(super::raw_bytes(&bytes[..13]), None);
    }
}
