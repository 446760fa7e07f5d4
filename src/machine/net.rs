//! Network interface facts: where the kernel lists its interfaces, and their queues.

use crate::host::Host;

/// One directory per interface (operstate, carrier, speed, device/, queues/ …).
pub(crate) const NET: &str = "/sys/class/net";
/// The calling process's network namespace (a link to "net:[INODE]").
const NETNS: &str = "/proc/self/ns/net";

/// Which interface a NIC run's lock and records are about: its network namespace and index, never its name alone
/// (/run is one directory for every namespace, and `eth1` in two of them is two NICs): "net{INODE}-if{INDEX}".
pub(crate) fn nic_key(host: &Host, nic: &str) -> crate::error::Result<String> {
    let idx = crate::sys::netdev::ifindex(nic)?;
    let ns = host
        .readlink(NETNS)
        .ok()
        .and_then(|l| parse_netns(&l.to_string_lossy()))
        .ok_or_else(|| crate::error::Error::failed(format!("cannot read {NETNS}")))?;
    Ok(format!("net{ns}-if{idx}"))
}

/// What a key found in /run names from this process's network namespace.
#[derive(Debug, PartialEq)]
pub(crate) enum Keyed {
    /// An interface of this namespace, by its name now.
    Here(String),
    /// This namespace's, but no interface has that index any more.
    Gone,
    /// Another namespace's: a run there puts it back.
    Elsewhere,
    /// Not a key.
    Unreadable,
}

pub(crate) fn keyed(host: &Host, key: &str) -> Keyed {
    let Some((ns, idx)) = parse_key(key) else {
        return Keyed::Unreadable;
    };
    let here = host
        .readlink(NETNS)
        .ok()
        .and_then(|l| parse_netns(&l.to_string_lossy()));
    if here != Some(ns) {
        return Keyed::Elsewhere;
    }
    crate::sys::netdev::name_of(idx).map_or(Keyed::Gone, Keyed::Here)
}

/// "net:[4026531840]" → 4026531840.
pub(crate) fn parse_netns(link: &str) -> Option<u64> {
    link.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// "net4026531840-if7" → (4026531840, 7).
pub(crate) fn parse_key(key: &str) -> Option<(u64, u32)> {
    let (ns, idx) = key.strip_prefix("net")?.split_once("-if")?;
    Some((ns.parse().ok()?, idx.parse().ok()?))
}

/// The IPv4 and IPv6 addresses `nic` has, from the running kernel (getifaddrs); None under --root or when the
/// kernel does not answer (the routing files then say).
pub(crate) fn live_address_counts(host: &Host, nic: &str) -> Option<(usize, usize)> {
    host.kernel()?;
    crate::sys::netdev::address_counts(nic).ok()
}

/// The driver of an interface: the device/driver link's name, else the DRIVER= line of device/uevent (a capture
/// may keep the file and not the link). None for a virtual interface without a device, or a name that is no
/// driver's.
pub(crate) fn driver(host: &Host, nic: &str) -> Option<String> {
    let from_link = host
        .readlink(&format!("{NET}/{nic}/device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()));
    let name = match from_link {
        Some(n) => n,
        None => {
            let uevent = host.read(&format!("{NET}/{nic}/device/uevent")).ok()?;
            uevent_driver(&uevent)?.to_string()
        }
    };
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    ok.then_some(name)
}

/// The DRIVER= value of a device's uevent file.
pub(crate) fn uevent_driver(uevent: &str) -> Option<&str> {
    uevent
        .lines()
        .find_map(|l| l.strip_prefix("DRIVER="))
        .map(str::trim)
        .filter(|d| !d.is_empty())
}

/// The interface's transmit and receive queues, counted from /sys/class/net/IF/queues (tx-N, rx-N); None when
/// that directory cannot be read.
pub(crate) fn queue_counts(host: &Host, nic: &str) -> Option<(usize, usize)> {
    let names = host.list(&format!("{NET}/{nic}/queues")).ok()?;
    let count = |p: &str| names.iter().filter(|n| n.starts_with(p)).count();
    Some((count("tx-"), count("rx-")))
}

/// One transmit queue's XPS mask file.
pub(crate) fn xps_path(nic: &str, queue: usize) -> String {
    format!("{NET}/{nic}/queues/tx-{queue}/xps_cpus")
}

/// What an interface is, as far as reaching an EtherCAT SubDevice goes: a plain Ethernet port (a NIC, veth, a
/// tap), or something frames sent on never reach a chain as they left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkKind {
    Ethernet,
    Loopback,
    /// With its ports.
    Bridge(Vec<String>),
    /// With its ports.
    Bond(Vec<String>),
    Wireless,
    /// A tun device: IP packets to a program, no Ethernet header.
    Tun,
    /// Any other link type (ARPHRD_*, from `type`).
    Other(u16),
}

const ARPHRD_ETHER: u16 = 1;
const ARPHRD_LOOPBACK: u16 = 772;
const ARPHRD_NONE: u16 = 65534;

impl LinkKind {
    /// Why frames sent on this interface never reach a SubDevice, and what to give instead; None for Ethernet.
    pub(crate) fn refusal(&self, nic: &str) -> Option<String> {
        let ports = |p: &[String]| match p {
            [] => "no ports".to_string(),
            p => format!("ports {}", p.join(", ")),
        };
        let why = match self {
            LinkKind::Ethernet => return None,
            LinkKind::Loopback => {
                "the loopback interface: what is sent on it comes straight back to this machine, \
                               no cable leaves it"
                    .to_string()
            }
            LinkKind::Bridge(p) => format!(
                "a bridge ({}): a software switch that forwards and delays frames between its ports",
                ports(p)
            ),
            LinkKind::Bond(p) => format!(
                "a bond ({}): it spreads frames over several ports, an EtherCAT chain hangs on one",
                ports(p)
            ),
            LinkKind::Wireless => {
                "a wireless interface: EtherCAT frames need a cable (100 Mb/s full duplex)"
                    .to_string()
            }
            LinkKind::Tun => {
                "a tun device: it carries IP packets to a program, not Ethernet frames".to_string()
            }
            LinkKind::Other(t) => format!("not an Ethernet interface (link type {t})"),
        };
        Some(format!(
            "{nic} is {why}; an EtherCAT SubDevice cannot be reached through it: give --nic the wired Ethernet port \
             the chain is plugged into"
        ))
    }
}

/// The interface's kind, from its directory: `type` (the ARPHRD link type), `uevent` (DEVTYPE) and the entries
/// the kernel adds (bridge/, bonding/, wireless/, phy80211, tun_flags); bridge and bond ports from brif/ and
/// bonding/slaves. An interface whose `type` cannot be read is taken for Ethernet (the socket calls decide then).
pub(crate) fn kind(host: &Host, nic: &str) -> LinkKind {
    let dir = format!("{NET}/{nic}");
    let Ok(link_type) = host.read(&format!("{dir}/type")) else {
        return LinkKind::Ethernet;
    };
    let uevent = host.read(&format!("{dir}/uevent")).unwrap_or_default();
    let entries = host.list(&dir).unwrap_or_default();
    match parse_kind(&link_type, &uevent, &entries) {
        LinkKind::Bridge(_) => {
            let mut ports = host.list(&format!("{dir}/brif")).unwrap_or_default();
            ports.sort();
            LinkKind::Bridge(ports)
        }
        LinkKind::Bond(_) => LinkKind::Bond(
            host.read(&format!("{dir}/bonding/slaves"))
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
        ),
        k => k,
    }
}

/// The kind from the text of `type`, of `uevent` and the names in the interface's directory (ports left empty).
pub(crate) fn parse_kind(link_type: &str, uevent: &str, entries: &[String]) -> LinkKind {
    let has = |n: &str| entries.iter().any(|e| e == n);
    let devtype = uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVTYPE="))
        .unwrap_or("");
    match link_type.trim().parse::<u16>() {
        Ok(ARPHRD_LOOPBACK) => LinkKind::Loopback,
        Ok(ARPHRD_NONE) if has("tun_flags") => LinkKind::Tun,
        Ok(ARPHRD_ETHER) | Err(_) => {
            if devtype == "bridge" || has("bridge") {
                LinkKind::Bridge(Vec::new())
            } else if devtype == "bond" || has("bonding") {
                LinkKind::Bond(Vec::new())
            } else if devtype == "wlan" || has("wireless") || has("phy80211") {
                LinkKind::Wireless
            } else {
                LinkKind::Ethernet
            }
        }
        Ok(t) => LinkKind::Other(t),
    }
}

#[cfg(test)]
mod tests {
    use super::{LinkKind, parse_key, parse_kind, parse_netns};

    #[test]
    fn keys_name_the_namespace_and_the_index() {
        // readlink /proc/self/ns/net on the Debian 12 host of this repository's CI.
        assert_eq!(parse_netns("net:[4026531840]"), Some(4026531840));
        assert_eq!(parse_netns("mnt:[4026531840]"), None);
        assert_eq!(parse_key("net4026531840-if7"), Some((4026531840, 7)));
        for junk in ["eth0", "net-if7", "net1-ifx", "net1if7"] {
            assert_eq!(parse_key(junk), None, "{junk}");
        }
    }

    fn names(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    // Captured on this project's Debian 12 build machine (kernel 6.18), `cat type uevent; ls` of each interface:
    // lo, a bridge (ip link add … type bridge), a tun and a tap (ip tuntap add), a veth.
    const COMMON: &str = "addr_assign_type addr_len address broadcast carrier carrier_changes dev_id dev_port \
                          dormant duplex flags ifalias ifindex iflink link_mode mtu operstate power queues speed \
                          statistics subsystem tx_queue_len type uevent";

    #[test]
    fn the_kernels_own_entries_say_what_an_interface_is() {
        let with = |extra: &str| names(&format!("{COMMON} {extra}"));
        assert_eq!(
            parse_kind("772\n", "INTERFACE=lo\nIFINDEX=1\n", &with("")),
            LinkKind::Loopback
        );
        let bridge = "DEVTYPE=bridge\nINTERFACE=nvbr0\nIFINDEX=466\n";
        assert_eq!(
            parse_kind("1\n", bridge, &with("brforward bridge brif")),
            LinkKind::Bridge(vec![])
        );
        let tun = "INTERFACE=nvtun0\nIFINDEX=467\n";
        assert_eq!(
            parse_kind("65534\n", tun, &with("group owner tun_flags")),
            LinkKind::Tun
        );
        // A tap is an Ethernet port to a program (a VM's NIC): allowed, like veth.
        let tap = "INTERFACE=nvtap0\nIFINDEX=468\n";
        assert_eq!(
            parse_kind("1\n", tap, &with("group owner tun_flags")),
            LinkKind::Ethernet
        );
        let veth = "INTERFACE=nvve0\nIFINDEX=470\n";
        assert_eq!(parse_kind("1\n", veth, &with("")), LinkKind::Ethernet);
        // Hand-made from the kernel's sources (no bonding module or Wi-Fi here): bonding sets DEVTYPE=bond and
        // adds bonding/ (drivers/net/bonding/bond_main.c, bond_sysfs.c); cfg80211 sets DEVTYPE=wlan and adds
        // phy80211 and wireless/ (net/wireless/core.c, sysfs.c).
        let bond = "DEVTYPE=bond\nINTERFACE=bond0\nIFINDEX=5\n";
        assert_eq!(
            parse_kind("1\n", bond, &with("bonding")),
            LinkKind::Bond(vec![])
        );
        let wlan = "DEVTYPE=wlan\nINTERFACE=wlan0\nIFINDEX=3\n";
        assert_eq!(
            parse_kind("1\n", wlan, &with("phy80211 wireless")),
            LinkKind::Wireless
        );
        // An IP-in-IP tunnel (ARPHRD_TUNNEL), and garbage in `type` judged by the rest.
        assert_eq!(parse_kind("768\n", "", &with("")), LinkKind::Other(768));
        assert_eq!(parse_kind("x", veth, &with("")), LinkKind::Ethernet);
    }

    #[test]
    fn a_refusal_says_what_the_interface_is_and_why() {
        assert_eq!(LinkKind::Ethernet.refusal("eth0"), None);
        let r = LinkKind::Bridge(vec!["eth1".into(), "eth2".into()])
            .refusal("br0")
            .unwrap();
        assert!(r.starts_with("br0 is a bridge (ports eth1, eth2)"), "{r}");
        assert!(r.contains("give --nic the wired Ethernet port"), "{r}");
        let r = LinkKind::Loopback.refusal("lo").unwrap();
        assert!(r.starts_with("lo is the loopback interface"), "{r}");
        assert!(
            LinkKind::Bond(vec![])
                .refusal("bond0")
                .unwrap()
                .contains("(no ports)")
        );
    }
}
