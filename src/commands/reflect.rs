use crate::cli::ReflectArgs;
use crate::error::{Error, Outcome, Result};
use crate::host::Host;
use crate::output::Output;

pub fn execute(_host: &Host, _out: Output, _args: &ReflectArgs) -> Result<Outcome> {
    Err(Error::failed("'reflect' is not built yet"))
}
