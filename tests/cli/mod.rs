//! The command line of every verb as a user meets it: the messages for wrong input, shell completion.

mod completion;
mod messages;
