//! The WebAssembly entry points, in the ABI Fluvio's engine calls: `(ptr, len, version)`, the
//! input written into a buffer the engine got from `alloc(len)`, the output handed back through
//! `copy_records`. Everything between is [`crate::init`], [`crate::array_map`] and
//! [`crate::look_back`] over the input's bytes.

use std::sync::{Mutex, OnceLock};

use agent_fold_core::Processor;

use crate::Reply;

// Named in the `env` module so the module links without `--allow-undefined`; the engine
// binds the import by its name, whatever its module.
#[link(wasm_import_module = "env")]
unsafe extern "C" {
    fn copy_records(ptr: i32, len: i32);
}

/// The instance's state: one per consumer stream, living as long as the stream.
static STATE: OnceLock<Mutex<Processor>> = OnceLock::new();

/// The last output handed to the engine. `copy_records` only notes where the output is; the
/// engine copies it out when the call returns, before it calls the module again, so it lives
/// until the next call starts. (Fluvio's generated code forgets it instead: the module's linear
/// memory then grows by every invocation's output for as long as the stream lives.)
static HANDED_OVER: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// One call: the previous output is freed, `f` runs over the input (freed once `f` returns,
/// so that input and output are the most the call holds), its output is handed over.
///
/// SAFETY: `ptr` and `len` are what the engine got from this module's `alloc(len)` and filled.
unsafe fn call(ptr: *mut u8, len: usize, f: impl FnOnce(&mut Processor, &[u8]) -> Reply) -> i32 {
    let mut handed = HANDED_OVER.lock().unwrap_or_else(|p| p.into_inner());
    *handed = Vec::new();
    // SAFETY: `alloc(len)` made a `Vec` of capacity `len` at `ptr`, which the engine filled.
    let input = unsafe { Vec::from_raw_parts(ptr, len, len) };
    let cell = STATE.get_or_init(|| Mutex::new(Processor::new(&Default::default())));
    let reply = f(&mut cell.lock().unwrap_or_else(|p| p.into_inner()), &input);
    drop(input);
    if let Some(out) = reply.output {
        // SAFETY: the engine reads `len` bytes at `ptr` of this module's memory after this
        // call returns; they stay allocated (in `HANDED_OVER`, whose moves keep the buffer in
        // place) until the next call.
        unsafe { copy_records(out.as_ptr() as i32, out.len() as i32) };
        *handed = out;
    }
    reply.code
}

#[cfg(not(feature = "probe"))]
use crate as entered;
/// The functions `init` and `array_map` export: the probe's, which time each phase, when built
/// with the `probe` feature.
#[cfg(feature = "probe")]
use crate::probe as entered;

/// An export the engine calls with `(ptr, len, version)`: `call` around the module's `$f`.
macro_rules! export {
    ($name:ident, $f:path) => {
        // Reached by its symbol from the engine, not by a path: `pub` is what exports it.
        #[allow(unreachable_pub)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(ptr: *mut u8, len: usize, version: i16) -> i32 {
            // SAFETY: the engine's call, as `call` needs it.
            unsafe { call(ptr, len, |p, input| $f(p, input, version)) }
        }
    };
}

export!(init, entered::init);
export!(array_map, entered::array_map);
export!(look_back, crate::look_back);
