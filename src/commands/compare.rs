use crate::cli::CompareArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &CompareArgs) -> Result<Outcome> {
    Err(Error::failed("'compare' is not built yet"))
}
