//! Network interface facts: where the kernel lists its interfaces.

/// One directory per interface (operstate, carrier, speed, device/, queues/ …).
pub(crate) const NET: &str = "/sys/class/net";
