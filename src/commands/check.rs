use crate::cli::CheckArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &CheckArgs) -> Result<Outcome> {
    Err(Error::failed("'check' is not built yet"))
}
