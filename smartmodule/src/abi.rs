//! The WebAssembly entry points, in the ABI Fluvio's engine calls: `(ptr, len, version)`,
//! input encoded with Fluvio's protocol, output handed back through `copy_records`.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::Mutex;

use fluvio_smartmodule::dataplane::core::{Decoder, Encoder};
use fluvio_smartmodule::dataplane::smartmodule::{
    SmartModuleInitErrorStatus, SmartModuleInitOutput, SmartModuleInitRuntimeError,
    SmartModuleInput, SmartModuleKind, SmartModuleLookbackErrorStatus, SmartModuleOutput,
    SmartModuleTransformErrorStatus, SmartModuleTransformRuntimeError,
};
use fluvio_smartmodule::{Record, eyre};

// Named in the `env` module so the module links without `--allow-undefined`; the engine
// binds the import by its name, whatever its module.
#[link(wasm_import_module = "env")]
unsafe extern "C" {
    fn copy_records(ptr: i32, len: i32);
}

/// The last output handed to the engine. `copy_records` only notes where the output is; the
/// engine copies it out after the call returns, so it must outlive the call, and is freed at
/// the next one. (Fluvio's generated code forgets it instead: the module's linear memory then
/// grows by every invocation's output for as long as the stream lives, until the store's
/// memory limit traps it.)
static HANDED_OVER: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Hands an encoded output to the engine.
fn hand_over<E: Encoder>(output: &E, version: i16) -> Result<(), ()> {
    let mut out = Vec::new();
    output.encode(&mut out, version).map_err(|_| ())?;
    let (ptr, len) = (out.as_ptr(), out.len());
    // The previous output, which the engine copied when that call returned, is dropped here;
    // this one's buffer does not move with the `Vec` that owns it.
    *HANDED_OVER.lock().unwrap_or_else(|p| p.into_inner()) = out;
    // SAFETY: the engine reads `len` bytes at `ptr` of this module's memory after this call
    // returns; they stay allocated until the next call.
    unsafe { copy_records(ptr as i32, len as i32) };
    Ok(())
}

/// Takes ownership of the input the engine wrote through `alloc`.
///
/// SAFETY: `ptr` and `len` are what the engine got from this module's `alloc(len)` and filled.
unsafe fn input(ptr: *mut u8, len: usize) -> Vec<u8> {
    unsafe { Vec::from_raw_parts(ptr, len, len) }
}

/// The invocation's base offset and records, from the input at `ptr` (see [`input`]).
unsafe fn records(ptr: *mut u8, len: usize, version: i16) -> Option<(i64, Vec<Record>)> {
    let bytes = unsafe { input(ptr, len) };
    let mut input = SmartModuleInput::default();
    input.decode(&mut Cursor::new(bytes), version).ok()?;
    let base_offset = input.base_offset();
    #[allow(deprecated)]
    let records = input.try_into_records(version).ok()?;
    Some((base_offset, records))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn init(ptr: *mut u8, len: usize, version: i16) -> i32 {
    let bytes = unsafe { input(ptr, len) };
    // The init input starts with the params map; its trailing fields (look-back) are not read.
    let mut params = BTreeMap::<String, String>::new();
    if params.decode(&mut Cursor::new(bytes), version).is_err() {
        return SmartModuleInitErrorStatus::DecodingInput as i32;
    }
    match crate::init(&params) {
        Ok(()) => 0,
        Err(e) => {
            // An SPU's log names no module: the message does.
            let output = SmartModuleInitOutput {
                error: SmartModuleInitRuntimeError::new(eyre!("agent-fold: {e}")),
            };
            match hand_over(&output, version) {
                Ok(()) => SmartModuleInitErrorStatus::InitError as i32,
                Err(()) => SmartModuleInitErrorStatus::EncodingOutput as i32,
            }
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn array_map(ptr: *mut u8, len: usize, version: i16) -> i32 {
    let Some((base_offset, records)) = (unsafe { records(ptr, len, version) }) else {
        return SmartModuleTransformErrorStatus::DecodingBaseInput as i32;
    };
    let mut output = SmartModuleOutput::default();
    match crate::process(records, base_offset) {
        Ok(out) => output.successes = out,
        Err(failed) => {
            let (e, record) = *failed;
            output.error = Some(SmartModuleTransformRuntimeError::new(
                &record,
                base_offset,
                SmartModuleKind::ArrayMap,
                eyre!("{}", e.message),
            ));
        }
    }
    let n = output.successes.len() as i32;
    match hand_over(&output, version) {
        Ok(()) => n,
        Err(()) => SmartModuleTransformErrorStatus::EncodingOutput as i32,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn look_back(ptr: *mut u8, len: usize, version: i16) -> i32 {
    let Some((base_offset, records)) = (unsafe { records(ptr, len, version) }) else {
        return SmartModuleLookbackErrorStatus::DecodingBaseInput as i32;
    };
    crate::look_back(&records, base_offset);
    0
}
