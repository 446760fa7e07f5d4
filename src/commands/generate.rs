use crate::cli::GenerateArgs;
use crate::error::{Error, Outcome, Result};

pub fn execute(_args: &GenerateArgs) -> Result<Outcome> {
    Err(Error::failed("'generate' is not built yet"))
}
