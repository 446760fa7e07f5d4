//! Kernel identity: the version in a release string, and option lookup in a kernel config (/boot/config-*).

/// (major, minor, patch) from a release such as "6.12.43+deb13-rt-amd64" or "6.1.0-50-rt-amd64".
pub fn version(release: &str) -> Option<(u32, u32, u32)> {
    let mut it = release.trim().splitn(3, '.');
    let major = it.next()?.parse().ok()?;
    let minor_s = it.next()?;
    let digits = |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_digit()).collect() };
    let minor_d = digits(minor_s);
    let minor = minor_d.parse().ok()?;
    let patch = if minor_d.len() == minor_s.len() {
        it.next().and_then(|p| digits(p).parse().ok()).unwrap_or(0)
    } else {
        0
    };
    Some((major, minor, patch))
}

/// The value of CONFIG_<name> ("y", "m", a number or string), None when unset or absent.
pub fn config<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?;
        rest.strip_prefix('=')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases() {
        assert_eq!(version("6.12.43+deb13-rt-amd64"), Some((6, 12, 43)));
        assert_eq!(version("6.1.0-50-rt-amd64\n"), Some((6, 1, 0)));
        assert_eq!(version("6.12.11"), Some((6, 12, 11)));
        assert_eq!(version("6.17-rc3"), Some((6, 17, 0)));
        assert_eq!(version("6.18.44-fc-v1045"), Some((6, 18, 44)));
        assert_eq!(version("garbage"), None);
        assert_eq!(version(""), None);
    }

    #[test]
    fn config_lookup() {
        // Lines from the captured guest's /boot/config-6.1.0-50-rt-amd64.
        let c = "CONFIG_PREEMPT_RT=y\n# CONFIG_PREEMPT_NONE is not set\nCONFIG_XDP_SOCKETS=y\nCONFIG_HZ=250\n";
        assert_eq!(config(c, "CONFIG_PREEMPT_RT"), Some("y"));
        assert_eq!(config(c, "CONFIG_PREEMPT"), None);
        assert_eq!(config(c, "CONFIG_PREEMPT_NONE"), None);
        assert_eq!(config(c, "CONFIG_HZ"), Some("250"));
    }
}
