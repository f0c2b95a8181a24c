//! The one door the tests, the fuzz targets and the lab come through into the host tools'
//! modules, which are otherwise the crate's own: each name here is one a test drives directly
//! rather than through the `agent-fold` binary.

pub mod accuracy {
    pub use crate::accuracy::report::{AccuracySummary, render};
    pub use crate::accuracy::{Log, config_for, cross, measure_path};
}

pub mod inspect {
    pub use crate::inspect::{census, render};
}

pub mod jsonl {
    pub use crate::jsonl::{line_record, lines, records};
}

pub mod logs {
    pub use crate::logs::files::log_files;
    pub use crate::logs::reader::{adapt_all, frame_type, read_records};
}

pub mod otlp {
    pub use crate::otlp::RpcStatus;
}

pub mod params {
    pub use crate::params::ModuleParams;
}

pub mod plot {
    pub use crate::plot::{CAPACITY, COMPACTION, PRESSURE, PROJECTED};
}

pub mod relay {
    #[cfg(any(test, feature = "test-doubles"))]
    pub use crate::relay::memory;
    pub use crate::relay::pump;
}

#[cfg(any(test, feature = "test-doubles"))]
pub mod serve {
    pub use crate::serve::fuzz;
}

pub mod settings {
    pub use crate::settings::{Homes, for_agent};
}
