//! See design.md (architecture).
