use crate::cli::SnapshotArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &SnapshotArgs) -> Result<Outcome> {
    Err(Error::failed("'snapshot' is not built yet"))
}
