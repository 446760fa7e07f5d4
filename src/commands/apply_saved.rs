use crate::cli::ApplySavedArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &ApplySavedArgs) -> Result<Outcome> {
    Err(Error::failed("'apply_saved' is not built yet"))
}
