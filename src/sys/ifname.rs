//! The one interface-name validator (run, reflect, check, fix, apply-saved all use it).

use crate::error::{Error, Result};

/// An interface name as the kernel accepts one (net/core/dev.c `dev_valid_name`): 1–15 bytes, not "." or "..",
/// no '/', ':' or whitespace; control characters are refused too, as a name we print and store must not carry
/// them. Checked before the name reaches an ioctl, a path under /sys or a message.
pub(crate) fn validate(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .bytes()
            .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b.is_ascii_control());
    if ok {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "'{}' is not an interface name (1-15 bytes, no '/', ':' or spaces)",
            name.escape_debug()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_before_use() {
        for good in [
            "eth0",
            "enp2s0",
            "eth0.100",
            "a",
            "nc-veth-123456",
            "wlp0s20f3",
        ] {
            assert!(validate(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a/b",
            "eth0:1",
            "eth 0",
            "a\tb",
            "sixteen-bytes-xx",
            ".",
            "..",
            "x\0y",
            "a\x1bb",
            "a\x7fb",
        ] {
            assert!(matches!(validate(bad), Err(Error::Usage(_))), "{bad:?}");
        }
        assert!(validate("fifteen-bytes-x").is_ok());
    }
}
