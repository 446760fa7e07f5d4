use crate::cli::RollbackArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &RollbackArgs) -> Result<Outcome> {
    Err(Error::failed("'rollback' is not built yet"))
}
