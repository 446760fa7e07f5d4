use crate::cli::FixArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &FixArgs) -> Result<Outcome> {
    Err(Error::failed("'fix' is not built yet"))
}
