//! The documentation: its examples are the binary's output, its size is what a newcomer reads in an afternoon.

mod examples;
