use crate::cli::RunArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &RunArgs) -> Result<Outcome> {
    Err(Error::failed("'run' is not built yet"))
}
